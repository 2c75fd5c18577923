/*
 * common.c - the helpers every bundled test app shares (see common.h).
 *
 * Invariants: no function here allocates after option parsing, none takes a
 * lock, and every failure either exits 2 (bad usage) or 1 (the system said
 * no), with one line on stderr.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include "common.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

int app_stop_flag;

static const char *app_name = "testapp";

void app_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", app_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* ---- options ---------------------------------------------------------- */

struct app_opt app_opt_int(const char *name, int *value, int min, int max,
                           const char *help)
{
	struct app_opt o;

	memset(&o, 0, sizeof(o));
	o.name = name;
	o.kind = APP_OPT_INT;
	o.value = value;
	o.min = min;
	o.max = max;
	o.help = help;
	return o;
}

struct app_opt app_opt_double(const char *name, double *value, double min,
                              double max, const char *help)
{
	struct app_opt o;

	memset(&o, 0, sizeof(o));
	o.name = name;
	o.kind = APP_OPT_DOUBLE;
	o.value = value;
	o.min = min;
	o.max = max;
	o.help = help;
	return o;
}

struct app_opt app_opt_choice(const char *name, int *value,
                              const char *const *choices, const char *help)
{
	struct app_opt o;

	memset(&o, 0, sizeof(o));
	o.name = name;
	o.kind = APP_OPT_CHOICE;
	o.value = value;
	o.choices = choices;
	o.help = help;
	return o;
}

static void usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", app_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (try --help)\n", stderr);
	exit(2);
}

static void print_default(const struct app_opt *o)
{
	switch (o->kind) {
	case APP_OPT_INT:
		printf("%d", *(const int *)o->value);
		break;
	case APP_OPT_DOUBLE:
		printf("%g", *(const double *)o->value);
		break;
	case APP_OPT_CHOICE:
		printf("%s", o->choices[*(const int *)o->value]);
		break;
	}
}

static void print_help(const struct app_info *app)
{
	size_t i, j;

	printf("usage: %s [OPTIONS]\n\n%s\n\noptions:\n", app->name,
	       app->summary);
	for (i = 0; i < app->nopts; i++) {
		const struct app_opt *o = &app->opts[i];

		printf("  --%s=", o->name);
		switch (o->kind) {
		case APP_OPT_INT:
			printf("N");
			break;
		case APP_OPT_DOUBLE:
			printf("X");
			break;
		case APP_OPT_CHOICE:
			for (j = 0; o->choices[j]; j++)
				printf("%s%s", j ? "|" : "", o->choices[j]);
			break;
		}
		printf("\n      %s (default ", o->help);
		print_default(o);
		printf(")\n");
	}
	printf("  --help\n      print this and exit\n");
}

static void set_value(const struct app_opt *o, const char *arg)
{
	char *end;
	size_t j;

	switch (o->kind) {
	case APP_OPT_INT: {
		long v;

		errno = 0;
		v = strtol(arg, &end, 10);
		if (errno || end == arg || *end || v < o->min || v > o->max)
			usage_error("invalid value '%s' for --%s: expected an "
			            "integer in %.0f..%.0f",
			            arg, o->name, o->min, o->max);
		*(int *)o->value = (int)v;
		break;
	}
	case APP_OPT_DOUBLE: {
		double v;

		errno = 0;
		v = strtod(arg, &end);
		if (errno || end == arg || *end || !isfinite(v) || v < o->min ||
		    v > o->max)
			usage_error("invalid value '%s' for --%s: expected a "
			            "number in %g..%g",
			            arg, o->name, o->min, o->max);
		*(double *)o->value = v;
		break;
	}
	case APP_OPT_CHOICE:
		for (j = 0; o->choices[j]; j++) {
			if (strcmp(arg, o->choices[j]) == 0) {
				*(int *)o->value = (int)j;
				return;
			}
		}
		usage_error("invalid value '%s' for --%s: expected one of the "
		            "names --help lists",
		            arg, o->name);
	}
}

void app_parse_args(const struct app_info *app, int argc, char **argv)
{
	int i;

	app_name = app->name;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *eq, *val;
		const struct app_opt *o = NULL;
		size_t n, k;

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			print_help(app);
			exit(0);
		}
		if (strncmp(a, "--", 2) != 0 || a[2] == '\0')
			usage_error("unexpected argument '%s'", a);
		a += 2;
		eq = strchr(a, '=');
		n = eq ? (size_t)(eq - a) : strlen(a);
		for (k = 0; k < app->nopts; k++) {
			if (strlen(app->opts[k].name) == n &&
			    strncmp(app->opts[k].name, a, n) == 0) {
				o = &app->opts[k];
				break;
			}
		}
		if (!o)
			usage_error("unknown option '--%.*s'", (int)n, a);
		if (eq) {
			val = eq + 1;
		} else {
			if (i + 1 >= argc)
				usage_error("option '--%s' needs a value",
				            o->name);
			val = argv[++i];
		}
		set_value(o, val);
	}
}

/* ---- clocks and CPU --------------------------------------------------- */

uint64_t app_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct timespec ns_to_timespec(uint64_t ns)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(ns / 1000000000u);
	ts.tv_nsec = (long)(ns % 1000000000u);
	return ts;
}

void app_sleep_until_ns(uint64_t abs_ns)
{
	struct timespec ts = ns_to_timespec(abs_ns);

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

void app_sleep_ns(uint64_t ns)
{
	app_sleep_until_ns(app_now_ns() + ns);
}

void app_cond_init_monotonic(pthread_cond_t *cond)
{
	pthread_condattr_t attr;
	int rc;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	rc = pthread_cond_init(cond, &attr);
	pthread_condattr_destroy(&attr);
	if (rc)
		app_die("pthread_cond_init: %s", strerror(rc));
}

struct timespec app_timespec_after(uint64_t rel_ns)
{
	return ns_to_timespec(app_now_ns() + rel_ns);
}

struct app_cpu app_cpu_now(void)
{
	struct rusage ru;
	struct app_cpu c;

	getrusage(RUSAGE_SELF, &ru);
	c.user_us =
	    (double)ru.ru_utime.tv_sec * 1e6 + (double)ru.ru_utime.tv_usec;
	c.sys_us =
	    (double)ru.ru_stime.tv_sec * 1e6 + (double)ru.ru_stime.tv_usec;
	c.ctx_switches = (double)ru.ru_nvcsw + (double)ru.ru_nivcsw;
	return c;
}

struct app_cpu app_cpu_diff(struct app_cpu end, struct app_cpu start)
{
	struct app_cpu d;

	d.user_us = end.user_us - start.user_us;
	d.sys_us = end.sys_us - start.sys_us;
	d.ctx_switches = end.ctx_switches - start.ctx_switches;
	return d;
}

/* ---- threads ---------------------------------------------------------- */

pthread_t app_thread_start(void *(*fn)(void *), void *arg, const char *role,
                           int index)
{
	pthread_t t;
	char buf[64];
	int rc;

	rc = pthread_create(&t, NULL, fn, arg);
	if (rc)
		app_die("pthread_create: %s", strerror(rc));
	snprintf(buf, sizeof(buf), "%s-%d", role, index);
	buf[15] = '\0';
	pthread_setname_np(t, buf);
	return t;
}

void app_thread_join(pthread_t thread)
{
	int rc = pthread_join(thread, NULL);

	if (rc)
		app_die("pthread_join: %s", strerror(rc));
}

uint64_t app_rand_seed(uint64_t salt)
{
	/* Deterministic (splitmix64 of the salt): runs repeat exactly. */
	uint64_t s = (salt + 1) * UINT64_C(0x9E3779B97F4A7C15);

	s = (s ^ (s >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	s = (s ^ (s >> 27)) * UINT64_C(0x94D049BB133111EB);
	s ^= s >> 31;
	return s ? s : UINT64_C(0x2545F4914F6CDD1D);
}
