// cxx_work - the C++ workload of the cxx tests: a thread named "cxx" makes a
// known number of operator new/delete calls in every form; a failing new
// must still throw std::bad_alloc under the shim. Built twice: with glibc
// malloc and linked with Debian's libtcmalloc (which defines its own
// operators). Exit status 0 when the program itself saw what it expected.
#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <new>

static const int N = 1000;
struct alignas(64) Wide {
	char c[64];
};
static void *volatile sink;

static void *work(void *)
{
	pthread_setname_np(pthread_self(), "cxx");
	int bad = 0;
	for (int i = 0; i < N; i++) {
		int *a = new int(i); // _Znwm
		sink = a;
		delete a;                       // _ZdlPvm (sized)
		char *b = new char[10 + i % 5]; // _Znam
		sink = b;
		delete[] b;                         // _ZdaPv
		int *c = new (std::nothrow) int(1); // nothrow
		sink = c;
		operator delete(c, std::nothrow); // nothrow delete
		Wide *w = new Wide;               // aligned new
		sink = w;
		delete w; // aligned sized delete
	}
	try {
		// Fails in every allocator: must throw, not return NULL.
		sink = new char[(size_t)1 << 62];
		bad = 1;
	} catch (const std::bad_alloc &) {
	}
	if (new (std::nothrow) char[(size_t)1 << 62] != nullptr)
		bad = 1;
	return bad ? (void *)1 : nullptr;
}

int main()
{
	pthread_t t;
	void *r;
	pthread_create(&t, nullptr, work, nullptr);
	pthread_join(t, &r);
	std::printf("cxx_work %s\n", r ? "FAILED" : "ok");
	return r ? 1 : 0;
}
