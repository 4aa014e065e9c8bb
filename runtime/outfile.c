/* runtime/outfile.c: temporaries renamed into place, and their cleanup table (runtime/outfile.h).
 * The table holds plain pointers set with one store each, so a signal handler that walks it sees
 * either a complete path or NULL; paths are published after they are written and cleared before
 * they are freed. */
#include "runtime/outfile.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SLOTS 4096
static char *volatile slot_tmp[SLOTS];     /* a temporary not yet renamed */
static char *volatile slot_done[SLOTS];    /* a group member already renamed, group not finished */

static int slot_take(char *tmp)
{
	for (int i = 0; i < SLOTS; i++)
		if (!slot_tmp[i] && !slot_done[i]) {
			slot_tmp[i] = tmp;
			return i;
		}
	return -1;     /* table full: the file is still atomic, only not removed on a signal */
}

void rt_out_remove_all(void)
{
	for (int i = 0; i < SLOTS; i++) {
		char *t = slot_tmp[i], *d = slot_done[i];
		if (t)
			unlink(t);
		if (d)
			unlink(d);
	}
}

/* SIGINT, SIGTERM, SIGHUP and SIGPIPE held off while a temporary is created and listed, and
 * while a group is renamed and relisted, so the handler never misses a file between the two. */
static void hold_signals(sigset_t *old)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGHUP);
	sigaddset(&s, SIGPIPE);
	sigprocmask(SIG_BLOCK, &s, old);
}

static void release_signals(const sigset_t *old) { sigprocmask(SIG_SETMASK, old, NULL); }

static void release(RtOutFile *o)
{
	if (o->slot >= 0)
		slot_tmp[o->slot] = slot_done[o->slot] = NULL;
	free(o->path);
	free(o->tmp);
	o->path = o->tmp = NULL;
	o->f = NULL;
	o->slot = -1;
}

int rt_out_check_name(const char *path, RtError *e)
{
	size_t n = strlen(path);
	struct stat st;
	if (n && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return rt_errorf(e, RT_EUSER, "cannot write '%s': it is a directory (give a file name)", path);
	if (n == 0 || path[n - 1] == '/')
		return rt_errorf(e, RT_EUSER, "cannot write '%s': a name ending in '/' names a directory (give a file name)",
				 path);
	return 0;
}

int rt_out_open(RtOutFile *o, const char *path, RtError *e)
{
	memset(o, 0, sizeof *o);
	o->slot = -1;
	if (!path || strcmp(path, "-") == 0) {
		o->f = stdout;
		return 0;
	}
	size_t n = strlen(path);
	struct stat st;
	int exists = stat(path, &st) == 0;
	if (rt_out_check_name(path, e) < 0)
		return -1;
	if (!(o->path = strdup(path)))
		return rt_errorf(e, RT_ENOMEM, "out of memory");
	if (exists && !S_ISREG(st.st_mode)) {
		/* a device, FIFO or terminal (/dev/null, /dev/stdout): written in place */
		if (!(o->f = fopen(path, "w"))) {
			int err = errno;
			release(o);
			return rt_errorf(e, RT_EUSER, "cannot write '%s': %s", path, strerror(err));
		}
		return 0;
	}
	if (!(o->tmp = malloc(n + 16))) {
		release(o);
		return rt_errorf(e, RT_ENOMEM, "out of memory");
	}
	snprintf(o->tmp, n + 16, "%s.tmpXXXXXX", path);
	sigset_t old;
	hold_signals(&old);
	int fd = mkstemp(o->tmp);
	int err = errno;
	if (fd >= 0)
		o->slot = slot_take(o->tmp);
	release_signals(&old);
	if (fd < 0) {
		release(o);
		return rt_errorf(e, RT_EUSER, "cannot write '%s': %s", path, strerror(err));
	}
	mode_t mask = umask(0);    /* mkstemp makes 0600; give the file the usual 0666 less the umask */
	umask(mask);
	fchmod(fd, 0666 & ~mask);
	if (!(o->f = fdopen(fd, "w"))) {
		int err = errno;
		close(fd);
		unlink(o->tmp);
		release(o);
		return rt_errorf(e, RT_EUSER, "cannot write '%s': %s", path, strerror(err));
	}
	return 0;
}

/* Flushes and closes o's stream; 0 or -1 with e set (nothing removed). */
static int finish(RtOutFile *o, RtError *e)
{
	if (!o->path) {
		if (fflush(stdout) != 0 || ferror(stdout))
			return rt_errorf(e, RT_EUSER, "cannot write to standard output: %s", strerror(errno));
		o->f = NULL;
		return 0;
	}
	int bad = ferror(o->f);
	int err = bad ? EIO : 0;
	if (fclose(o->f) != 0 && !bad)
		bad = 1, err = errno;
	o->f = NULL;
	return bad ? rt_errorf(e, RT_EUSER, "cannot write '%s': %s", o->path, strerror(err ? err : EIO)) : 0;
}

int rt_out_close(RtOutFile *o, RtError *e)
{
	return o->f ? finish(o, e) : 0;
}

int rt_out_commit(RtOutFile *o, RtError *e)
{
	return rt_out_commit_group(o, 1, e);
}

int rt_out_commit_group(RtOutFile *o, int n, RtError *e)
{
	int rc = 0, done = 0;
	for (int i = 0; i < n && rc == 0; i++)
		rc = rt_out_close(&o[i], e);
	sigset_t old;
	hold_signals(&old);
	for (int i = 0; i < n && rc == 0; i++, done++) {
		if (!o[i].tmp)
			continue;
		if (rename(o[i].tmp, o[i].path) != 0) {
			rc = rt_errorf(e, RT_EUSER, "cannot write '%s': %s", o[i].path, strerror(errno));
			break;
		}
		if (o[i].slot >= 0) {     /* renamed: now the group's file to remove on a signal */
			slot_done[o[i].slot] = o[i].path;
			slot_tmp[o[i].slot] = NULL;
		}
	}
	for (int i = 0; i < n; i++) {
		if (rc < 0 && o[i].tmp)
			unlink(i < done ? o[i].path : o[i].tmp);
		if (o[i].f && o[i].f != stdout)
			fclose(o[i].f);
		release(&o[i]);
	}
	release_signals(&old);     /* a signal held off now finds the group whole (or gone) */
	return rc;
}

void rt_out_abort(RtOutFile *o)
{
	if (o->f && o->f != stdout)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	release(o);
}
