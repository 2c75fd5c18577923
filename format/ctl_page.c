/*
 * ctl_page.c - the control page's shared helpers (ctl_page.h): the private
 * directory walk, signal and state names. Used by the shim (no allocation,
 * no lock) and by `mallock ctl`.
 */
#define _GNU_SOURCE
#include "ctl_page.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *ctlp_state_name(uint32_t state)
{
	/* clang-format off */
	static const char *const names[] = {
#define CTLP_NAME_(n, s) s,
		CTLP_STATES(CTLP_NAME_)
#undef CTLP_NAME_
	};
	/* clang-format on */
	return state < sizeof names / sizeof names[0] ? names[state] : "?";
}

int ctlp_signal_ok(int sig)
{
	if (sig >= SIGRTMIN && sig <= SIGRTMAX)
		return 1;
	return sig == SIGUSR1 || sig == SIGUSR2 || sig == SIGHUP ||
	       sig == SIGURG || sig == SIGWINCH || sig == SIGPWR;
}

void ctlp_default_dir(char *out, size_t cap, uint32_t uid)
{
	snprintf(out, cap, "/tmp/mallock-%u", (unsigned)uid);
}

void ctlp_name(char *out, size_t cap, uint32_t pid)
{
	snprintf(out, cap, "%u.page", (unsigned)pid);
}

/* The next component of *p ("" at the end) into comp. */
static int next_comp(const char **p, char *comp, size_t cap)
{
	while (**p == '/')
		(*p)++;
	size_t n = strcspn(*p, "/");
	if (n >= cap)
		return -1;
	memcpy(comp, *p, n);
	comp[n] = 0;
	*p += n;
	return 0;
}

int ctlp_dir_open(const char *path, uint32_t uid, int create, const char **why)
{
	if (path[0] != '/') {
		*why = "is not an absolute path";
		return -1;
	}
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		*why = "cannot open /";
		return -1;
	}
	const char *p = path;
	char comp[256];
	int depth = 0;
	for (;;) {
		if (next_comp(&p, comp, sizeof comp) != 0) {
			*why = "has a component longer than 255 bytes";
			goto fail;
		}
		if (!comp[0])
			break;
		depth++;
		while (*p == '/')
			p++;
		int last = *p == 0;
		if (!strcmp(comp, "..") || !strcmp(comp, ".")) {
			*why = "has a '.' or '..' component";
			goto fail;
		}
		int nfd = openat(
		    fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 && errno == ENOENT && last && create) {
			if (mkdirat(fd, comp, 0700) != 0 && errno != EEXIST) {
				*why = "cannot be created";
				goto fail;
			}
			nfd = openat(fd, comp,
			             O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			                 O_CLOEXEC);
		}
		if (nfd < 0) {
			*why = errno == ELOOP || errno == ENOTDIR
			           ? "has a symlink or a non-directory in it"
			       : errno == ENOENT ? "does not exist"
			                         : "cannot be opened";
			goto fail;
		}
		close(fd);
		fd = nfd;
		struct stat st;
		if (fstat(fd, &st) != 0) {
			*why = "cannot be checked";
			goto fail;
		}
		if (last) {
			if (st.st_uid != uid) {
				*why = "belongs to another user";
				goto fail;
			}
			if (st.st_mode & 077) {
				*why =
				    "is open to other users (mode is not 0700)";
				goto fail;
			}
		} else if ((st.st_uid != 0 && st.st_uid != uid) ||
		           ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))) {
			*why = "is inside a directory that another user can "
			       "change";
			goto fail;
		}
	}
	if (depth == 0) {
		*why = "is the root directory";
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}
