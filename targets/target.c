/* targets/target.c: the target table (expanded from targets/targets.def), cost-hook
 * registration, and machine descriptions as TgtMachine.  Machine files are looked up like the
 * XML machines: $AICC_MACHINES, then <exe dir>/../share/aicc/machines, then
 * <exe dir>/../targets/machines; the machine hash is FNV-1a 64 of the file's bytes. */
#include "targets/target.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const Target tgt_targets[] = {
#define TARGET(name, machine, lower, cost, help) { #name, machine, help, lower, cost },
#include "targets/targets.def"
#undef TARGET
};
const int tgt_ntargets = (int)(sizeof tgt_targets / sizeof tgt_targets[0]);

const Target *tgt_find(const char *name)
{
	for (int i = 0; i < tgt_ntargets; i++)
		if (strcmp(tgt_targets[i].name, name) == 0)
			return &tgt_targets[i];
	return NULL;
}

void tgt_register_costs(void)
{
	for (int i = 0; i < tgt_ntargets; i++)
		rt_cost_register(tgt_targets[i].name, tgt_targets[i].cost);
}

/* Writes into buf the first existing candidate path for machine `name`; 0 or -1. */
static int machine_path(const char *name, char *buf, size_t n)
{
	char exe[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[k > 0 ? k : 0] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	const char *env = getenv("AICC_MACHINES");
	const char *fmt[3] = { "%s/%s.aim", "%s/../share/aicc/machines/%s.aim", "%s/../targets/machines/%s.aim" };
	const char *dir[3] = { env, exe, exe };
	for (int i = 0; i < 3; i++) {
		if (!dir[i] || !*dir[i])
			continue;
		snprintf(buf, n, fmt[i], dir[i], name);
		if (access(buf, R_OK) == 0)
			return 0;
	}
	return -1;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *s = NULL;
	size_t cap = 0, n = 0, got;
	do {
		if (n == cap) {
			char *t = realloc(s, cap = cap ? cap * 2 : 4096);
			if (!t) {
				free(s);
				fclose(f);
				return NULL;
			}
			s = t;
		}
		got = fread(s + n, 1, cap - n, f);
		n += got;
	} while (got);
	fclose(f);
	*len = n;
	return s;
}

int tgt_machine_load(const char *name, TgtMachine *m, RtError *e)
{
	char path[PATH_MAX];
	size_t len = strlen(name);
	int is_path = strchr(name, '/') || (len > 4 && strcmp(name + len - 4, ".aim") == 0);
	if (is_path)
		snprintf(path, sizeof path, "%s", name);
	else if (machine_path(name, path, sizeof path) < 0)
		return rt_errorf(e, RT_EUSER, "aicc: error: unknown machine '%s' (no %s.aim in $AICC_MACHINES "
				 "or the installed machine directories)", name, name);
	char *text = slurp(path, &len);
	if (!text)
		return rt_errorf(e, RT_EUSER, "%s: error: cannot read machine description", path);
	m->desc = plan_parse(path, text, len, e);
	if (m->desc) {
		m->desc->machine_hash = plan_hash(text, len);
		m->desc->file = NULL;
	}
	free(text);
	return m->desc ? 0 : -1;
}

void tgt_machine_free(TgtMachine *m)
{
	plan_free(m->desc);
	m->desc = NULL;
}

int tgt_machine_copy(const TgtMachine *m, Plan *p, RtError *e)
{
	const Plan *d = m->desc;
	for (int i = 0; i < d->ndevices; i++)
		if (plan_add_device(p, &d->devices[i], e) < 0)
			return -1;
	for (int i = 0; i < d->nspaces; i++)
		if (plan_add_space(p, &d->spaces[i], e) < 0)
			return -1;
	for (int i = 0; i < d->nunits; i++)
		if (plan_add_unit(p, &d->units[i], e) < 0)
			return -1;
	for (int i = 0; i < d->nlinks; i++)
		if (plan_add_link(p, &d->links[i], e) < 0)
			return -1;
	return 0;
}
