/* runtime/outfile.h: output files that appear whole or not at all.
 *
 * rt_out_open creates a temporary beside the target (PATH.tmpXXXXXX, mode 0666 less the umask);
 * rt_out_commit flushes, closes and renames it over PATH; rt_out_abort removes it.  A group of
 * files (a plan and its weights; a run's outputs, report and trace) is committed by
 * rt_out_commit_group in order, the last file last: if a rename fails, the files of the group
 * already renamed are removed again, so a failure leaves none of them.  Members written one
 * after the other are closed with rt_out_close as each is done (their temporaries stay, up to
 * the table's 4096 entries, and no descriptor is held), then committed together.  PATH "-" is stdout; an existing device or FIFO (/dev/null) is
 * written in place (renaming over it would replace the node with a plain file); a directory, or a
 * path ending in '/', is an error.
 *
 * Every live temporary (and, while a group commits, the files it renamed) is listed in a fixed
 * table that rt_out_remove_all unlinks.  rt_out_remove_all is async-signal-safe: the driver calls
 * it from its SIGINT/SIGTERM/SIGHUP/SIGPIPE handler, so an interrupted compile or run leaves no
 * temporary and no half of a plan.  Errors come back in RtError (RT_EUSER) naming the path;
 * nothing exits.
 */
#ifndef AICC_OUTFILE_H
#define AICC_OUTFILE_H

#include <stdio.h>

#include "runtime/rt.h"

typedef struct RtOutFile {
	FILE *f;
	char *path;     /* the target, or NULL for stdout */
	char *tmp;      /* the temporary, or NULL when written in place */
	int slot;       /* index in the cleanup table, or -1 */
} RtOutFile;

int rt_out_open(RtOutFile *o, const char *path, RtError *e);
/* 0 when path can name an output file; -1 (RT_EUSER, "cannot write 'PATH': it is a directory" or
 * "...: a name ending in '/' names a directory") for an empty name, an existing directory or a
 * name ending in '/'.  rt_out_open checks this first. */
int rt_out_check_name(const char *path, RtError *e);
/* Flush and close the stream of a file whose writing is done; its temporary stays until
 * rt_out_commit_group (or rt_out_abort) of its group.  0, or -1 with e set (nothing removed:
 * abort the group).  Closing a closed file does nothing. */
int rt_out_close(RtOutFile *o, RtError *e);
/* Flush, close, rename.  Returns 0, or -1 with e set (the temporary is removed). */
int rt_out_commit(RtOutFile *o, RtError *e);
/* Commits n open (or closed, not yet committed) files in order; on failure removes every temporary and every file of the group
 * already renamed.  Returns 0 or -1 with e set. */
int rt_out_commit_group(RtOutFile *o, int n, RtError *e);
/* Closes and removes the temporary (nothing to remove for stdout or a device). */
void rt_out_abort(RtOutFile *o);
/* Unlinks every listed temporary and every file of a group being committed; async-signal-safe. */
void rt_out_remove_all(void);

#endif
