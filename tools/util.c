/* tools/util.c: option parsing helpers and atomic output files for the driver. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/driver.h"
#include "tools/progress.h"

void drv_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	progress_pause();   /* an error is never printed into the progress line */
	fputs("aicc: error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void drv_report(const char *msg)
{
	progress_pause();
	if (msg && strstr(msg, "error: "))     /* already "file:line: error: ..." */
		fprintf(stderr, "%s\n", msg);
	else
		drv_error("%s", msg && *msg ? msg : "unknown error");
}

int opt_value(int argc, char **argv, int *i, const char *name, const char **val)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (strncmp(a, name, n) != 0)
		return 0;
	if (a[n] == '=') {
		*val = a + n + 1;
		return 1;
	}
	if (a[n] != 0)
		return 0;
	if (*i + 1 >= argc) {
		drv_error("option '%s' needs a value", name);
		return -1;
	}
	*val = argv[++*i];
	return 1;
}

int out_open(OutFile *o, const char *path)
{
	memset(o, 0, sizeof *o);
	if (!path || strcmp(path, "-") == 0) {
		o->f = stdout;
		return 0;
	}
	struct stat st;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		/* a device, FIFO or terminal (/dev/null, /dev/stdout): write to it in place; renaming a
		 * temporary over it would replace the device node with a plain file */
		if (!(o->f = fopen(path, "w")) || !(o->path = strdup(path))) {
			drv_error("cannot write '%s': %s", path, strerror(errno));
			if (o->f)
				fclose(o->f);
			o->f = NULL;
			return -1;
		}
		return 0;
	}
	size_t n = strlen(path) + 16;
	o->path = strdup(path);
	o->tmp = malloc(n);
	if (!o->path || !o->tmp) {
		drv_error("out of memory");
		return -1;
	}
	snprintf(o->tmp, n, "%s.tmpXXXXXX", path);
	int fd = mkstemp(o->tmp);
	if (fd >= 0) {  /* mkstemp makes 0600; give the file the usual 0666 less the umask */
		mode_t mask = umask(0);
		umask(mask);
		fchmod(fd, 0666 & ~mask);
	}
	if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
		drv_error("cannot write '%s': %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(o->path);
		free(o->tmp);
		o->path = o->tmp = NULL;
		return -1;
	}
	return 0;
}

int out_commit(OutFile *o)
{
	if (!o->tmp && !o->path) {
		if (fflush(stdout) != 0 || ferror(stdout)) {
			drv_error("cannot write to standard output: %s", strerror(errno));
			return -1;
		}
		return 0;
	}
	if (!o->tmp) {           /* a device or FIFO written in place */
		int bad = ferror(o->f);
		bad |= fclose(o->f) != 0;
		if (bad)
			drv_error("cannot write '%s': %s", o->path, strerror(errno));
		free(o->path);
		o->path = NULL;
		return bad ? -1 : 0;
	}
	int bad = ferror(o->f);
	bad |= fclose(o->f) != 0;
	if (!bad && rename(o->tmp, o->path) != 0)
		bad = 1;
	if (bad) {
		drv_error("cannot write '%s': %s", o->path, strerror(errno));
		remove(o->tmp);
	}
	free(o->path);
	free(o->tmp);
	o->path = o->tmp = NULL;
	return bad ? -1 : 0;
}

void out_abort(OutFile *o)
{
	if (!o->tmp && o->path) {   /* a device or FIFO written in place: nothing to remove */
		fclose(o->f);
		free(o->path);
		o->path = NULL;
	}
	if (!o->tmp)
		return;
	fclose(o->f);
	remove(o->tmp);
	free(o->path);
	free(o->tmp);
	o->path = o->tmp = NULL;
}
