/*
 * proc.c - reads /proc/PID for `mallock ctl` (proc.h): stat, status,
 * maps, environ, the tasks' signal masks, and the process walks.
 *
 * Invariants: every file is read into a bounded buffer (what does not fit
 * is cut, never overrun), and stat is parsed from its last ')', so a comm
 * holding spaces or parentheses cannot shift the fields.
 */
#define _GNU_SOURCE
#include "proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static ssize_t slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	ssize_t r;
	while (n < cap - 1 && (r = read(fd, buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = 0;
	return (ssize_t)n;
}

int proc_stat(long pid, proc_t *p)
{
	char path[64], buf[2048];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	if (slurp(path, buf, sizeof buf) <= 0)
		return -1;
	char *l = strchr(buf, '('), *r = strrchr(buf, ')');
	if (!l || !r)
		return -1;
	snprintf(p->comm, sizeof p->comm, "%.*s", (int)(r - l - 1), l + 1);
	char *f = r + 2; /* field 3 */
	int field = 3;
	for (char *s = strtok(f, " "); s; s = strtok(NULL, " "), field++) {
		if (field == 4)
			p->ppid = atol(s);
		if (field == 22) {
			p->start = strtoull(s, NULL, 10);
			return 0;
		}
	}
	return -1;
}

int proc_read(long pid, proc_t *p)
{
	memset(p, 0, sizeof *p);
	p->pid = pid;
	if (proc_stat(pid, p) != 0)
		return -1;
	char path[64], buf[8192];
	snprintf(path, sizeof path, "/proc/%ld/status", pid);
	if (slurp(path, buf, sizeof buf) > 0) {
		char *u = strstr(buf, "\nUid:");
		if (u)
			sscanf(u + 5, "%u %u %u %u", &p->uid[0], &p->uid[1],
			       &p->uid[2], &p->uid[3]);
		char *c = strstr(buf, "\nSigCgt:");
		if (c)
			p->sig_caught = strtoull(c + 8, NULL, 16);
	}
	snprintf(path, sizeof path, "/proc/%ld/maps", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	char line[1400], suffix[48];
	snprintf(suffix, sizeof suffix, "/%ld.page", pid);
	while (fgets(line, sizeof line, f)) {
		p->maps_ok = 1;
		line[strcspn(line, "\n")] = 0;
		char *name = strchr(line, '/');
		if (!name)
			continue;
		const char *base = strrchr(name, '/') + 1;
		if (!strncmp(base, "libmallock.so", 13))
			p->shim = 1;
		char *del = strstr(name, " (deleted)");
		size_t n = del ? (size_t)(del - name) : strlen(name);
		size_t sl = strlen(suffix);
		if (n > sl && !memcmp(name + n - sl, suffix, sl) &&
		    !p->page[0]) {
			snprintf(p->page, sizeof p->page, "%.*s", (int)n, name);
			snprintf(p->page_range, sizeof p->page_range, "%.*s",
			         (int)strcspn(line, " "), line);
		}
	}
	fclose(f);
	return 0;
}

int proc_sig_deliverable(long pid, int sig)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%ld/task", pid);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	int ok = 0;
	struct dirent *e;
	while (!ok && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char sp[400], buf[4096];
		snprintf(sp, sizeof sp, "%s/%s/status", path, e->d_name);
		if (slurp(sp, buf, sizeof buf) <= 0)
			continue;
		char *b = strstr(buf, "\nSigBlk:");
		if (b && !(strtoull(b + 8, NULL, 16) & (1ull << (sig - 1))))
			ok = 1;
	}
	closedir(d);
	return ok;
}

void proc_env(long pid, const char *name, char *out, size_t cap)
{
	char path[64];
	static char buf[1 << 16];
	out[0] = 0;
	snprintf(path, sizeof path, "/proc/%ld/environ", pid);
	ssize_t n = slurp(path, buf, sizeof buf);
	if (n <= 0)
		return;
	size_t len = strlen(name);
	for (char *p = buf; p < buf + n; p += strlen(p) + 1)
		if (!strncmp(p, name, len) && p[len] == '=') {
			snprintf(out, cap, "%s", p + len + 1);
			return;
		}
}

uint64_t proc_cpu(long pid)
{
	char path[64], buf[2048];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	if (slurp(path, buf, sizeof buf) <= 0)
		return 0;
	char *r = strrchr(buf, ')');
	if (!r)
		return 0;
	unsigned long long ut = 0, st = 0;
	if (sscanf(r + 2,
	           "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
	           &st) != 2)
		return 0;
	return ut + st;
}

long *proc_tree_pids(long root, size_t *n)
{
	size_t cap = 64, len = 0, all_n = 0, all_cap = 256;
	long *out = malloc(cap * sizeof *out);
	long(*all)[2] = malloc(all_cap * sizeof *all);
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		proc_t p;
		if (*end || pid <= 0 || proc_stat(pid, &p) != 0)
			continue;
		if (all_n == all_cap)
			all = realloc(all, (all_cap *= 2) * sizeof *all);
		all[all_n][0] = pid;
		all[all_n++][1] = p.ppid;
	}
	if (d)
		closedir(d);
	out[len++] = root;
	for (size_t i = 0; i < len; i++)
		for (size_t j = 0; j < all_n; j++)
			if (all[j][1] == out[i]) {
				if (len == cap)
					out = realloc(out,
					              (cap *= 2) * sizeof *out);
				out[len++] = all[j][0];
			}
	free(all);
	*n = len;
	return out;
}

long *proc_exe_pids(const char *name, size_t *n)
{
	size_t cap = 64, len = 0;
	long *out = malloc(cap * sizeof *out);
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char *end, path[64], exe[1024];
		long pid = strtol(e->d_name, &end, 10);
		proc_t p;
		if (*end || pid <= 0 || pid == getpid() ||
		    proc_stat(pid, &p) != 0)
			continue;
		snprintf(path, sizeof path, "/proc/%ld/exe", pid);
		ssize_t l = readlink(path, exe, sizeof exe - 1);
		int match = 0;
		if (l > 0) {
			exe[l] = 0;
			char *del = strstr(exe, " (deleted)");
			if (del)
				*del = 0;
			const char *b = strrchr(exe, '/');
			match = !strcmp(b ? b + 1 : exe, name);
		} else {
			match = !strncmp(p.comm, name, 15) && strlen(name) >= 15
			            ? 1
			            : !strcmp(p.comm, name);
		}
		if (!match)
			continue;
		if (len == cap)
			out = realloc(out, (cap *= 2) * sizeof *out);
		out[len++] = pid;
	}
	if (d)
		closedir(d);
	*n = len;
	return out;
}
