/*
 * newfail - a throwing operator new that cannot allocate, in a program
 * without a C++ runtime: the shim's operator new (its fallback, with no
 * next operator new to call) finds no std::__throw_bad_alloc to call and
 * must abort, as a throwing new may not return NULL; the nothrow form
 * returns NULL.
 *
 * The child looks up the shim's _Znwm and _ZnwmRKSt9nothrow_t (this
 * program links no libstdc++), asks each for more than any heap holds,
 * and turns SIGABRT into exit status 42; it exits 3 when the throwing
 * form returned. The driver wants 42.
 */
#define _GNU_SOURCE
#include "shim_test.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>

static void on_abort(int sig)
{
	(void)sig;
	_exit(42);
}

static int child(void)
{
	void *(*new_)(size_t), *(*new_nt)(size_t, const void *);
	void *a = dlsym(RTLD_DEFAULT, "_Znwm");
	void *b = dlsym(RTLD_DEFAULT, "_ZnwmRKSt9nothrow_t");
	memcpy(&new_, &a, sizeof a); /* ISO C has no object-to-function cast */
	memcpy(&new_nt, &b, sizeof b);
	if (!new_ || !new_nt)
		return 2; /* the shim does not export them */
	size_t huge = SIZE_MAX / 4;
	static const char nothrow = 0;
	if (new_nt(huge, &nothrow) != NULL)
		return 4;
	signal(SIGABRT, on_abort);
	void *p = new_(huge);
	fprintf(stderr, "newfail: the throwing operator new returned %p\n", p);
	return 3;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child();
	st_setup(argc, argv);
	check_eq(st_run(NULL, NULL), 42);
	st_clean();
	return test_done();
}
