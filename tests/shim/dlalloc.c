/* dlalloc - a tiny library that the dlopen test loads: it allocates. */
#include <stdlib.h>

void *volatile dlalloc_sink;

__attribute__((visibility("default"))) int dlalloc_run(int n)
{
	for (int i = 0; i < n; i++) {
		dlalloc_sink = malloc(12345);
		free(dlalloc_sink);
	}
	return n;
}
