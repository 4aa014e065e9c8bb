/* tools/cmd_machines.c: `aicc machines` and `aicc targets`: what is built in.
 *
 * `aicc machines` lists the built-in machine descriptions (name, devices, description);
 * `aicc machines NAME|FILE.xml [--set path=value]...` loads one, applies the overrides and prints
 * every number with its unit, kind and source, then the instruction shapes, formats, links and
 * the source list; `--fields` prints only "path value" lines for scripts.  `aicc targets` lists
 * the compilation targets.  Requires targets/machine.h.
 */
#include <stdlib.h>
#include <string.h>

#include "targets/machine.h"
#include "targets/target.h"
#include "tools/driver.h"


int cmd_targets(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("usage: aicc targets\n\nLists the compilation targets, their default machine, the --precision words\n"
		       "and options each takes on that machine, and its -O1 pipeline (the default, but for\n"
		       "the reference target).\n");
		return EXIT_OK;
	}
	if (argc > 1) {
		drv_error("'targets' takes no arguments");
		return EXIT_USER;
	}
	for (int i = 0; i < tgt_ntargets; i++) {
		const Target *t = tgt_targets[i];
		char words[512] = "?";
		Machine *m = machine_load(t->default_machine, stderr);
		if (m)
			prec_valid_words(t, m, words, sizeof words);
		printf("%-12s machine %-12s %s\n", t->name, t->default_machine, t->help);
		char note[160];
		const char *fm = m && t->formats_note ? t->formats_note(m, note, sizeof note) : NULL;
		printf("%-12s --precision %s (default %s%s%s)\n%-12s -O1 %s%s\n", "", words, t->default_precision,
		       fm ? ": " : "", fm ? fm : "", "", t->pipeline,
		       strcmp(t->name, "reference") ? " (the default)" : " (default -O0: the unfused numerical reference)");
		if (m)
			machine_free(m);
	}
	return EXIT_OK;
}

/* "8xgpu + host" */
static void device_summary(const Machine *m, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = 0;
	for (int i = 0; i < m->ndevs && n < len; i++)
		n += snprintf(buf + n, len - n, "%s%gx%s", i ? " + " : "", m->devs[i].count.v,
			      m->devs[i].id);
}

static int list_machines(void)
{
	char *names[256];
	int n = machine_list(names, 256);
	if (n == 0) {
		drv_error("no built-in machines found (set AICC_MACHINES to targets/machines)");
		return EXIT_USER;
	}
	FILE *quiet = fopen("/dev/null", "w");
	for (int i = 0; i < n; i++) {
		Machine *m = machine_load(names[i], quiet);
		char devs[256];
		if (m) {
			device_summary(m, devs, sizeof devs);
			printf("%-14s %-22s %s\n", names[i], devs, m->description);
		} else {
			printf("%-14s %-22s %s\n", names[i], "?", "(invalid: 'aicc machines NAME' says why)");
		}
		machine_free(m);
		free(names[i]);
	}
	if (quiet)
		fclose(quiet);
	return EXIT_OK;
}

/* A source as a reader finds it: the research notes the XML cites by file name ("hardware.md
 * §2.2", "backends.md §8") live in docs/reference/. */
static void print_source(const char *src)
{
	if (!strncmp(src, "hardware.md", 11) || !strncmp(src, "backends.md", 11))
		printf("docs/reference/");
	printf("%s", src);
}

/* One "path value kind source (note)" line per field whose path starts with prefix; the path
 * column is as wide as the longest path, so long keys keep the columns. */
static void print_fields(const Machine *m, const char *prefix)
{
	size_t pl = strlen(prefix);
	int w = 28;
	for (int i = 0; i < machine_nfields(m); i++) {
		const Num *n;
		const char *path = machine_field_path(m, i, &n);
		if (!strncmp(path, prefix, pl) && num_has(n) && (int)strlen(path) > w)
			w = (int)strlen(path);
	}
	for (int i = 0; i < machine_nfields(m); i++) {
		const Num *n;
		const char *path = machine_field_path(m, i, &n);
		if (strncmp(path, prefix, pl) != 0 || !num_has(n))
			continue;
		char value[128];
		if (n->per != PER_ONE)
			snprintf(value, sizeof value, "%s (= %g)", n->text, n->v);
		else
			snprintf(value, sizeof value, "%s", n->text);
		printf("  %-*s %-30s %-11s ", w, path, value, prov_name(n->prov));
		print_source(n->source);
		printf("%s%s%s\n", n->note ? " (" : "", n->note ? n->note : "", n->note ? ")" : "");
	}
}

static void print_dtypes(uint64_t mask)
{
	for (int d = 0; d < DT_COUNT; d++)
		if ((mask >> d) & 1)
			printf(" %s", rt_dtype_name((DType)d));
}

static void print_device(const Machine *m, const Device *d)
{
	char prefix[128];
	printf("\n%s %s: %g x %s [%s%s%s%s%s]%s%s\n", d->is_host ? "host" : "device", d->id,
	       d->count.v, d->name ? d->name : "?", devkind_name(d->kind), d->vendor ? ", " : "",
	       d->vendor ? d->vendor : "", d->arch ? ", " : "", d->arch ? d->arch : "",
	       d->role ? " role: " : "", d->role ? d->role : "");
	if (d->static_schedule)
		printf("  statically scheduled (cycle-exact compiler schedule)\n");
	snprintf(prefix, sizeof prefix, "%s.", d->id);
	print_fields(m, prefix);
	for (int i = 0; i < d->nmma; i++) {
		const MmaFamily *f = &d->mma[i];
		printf("  mma %s: issued per %s; A in %s, B in %s, accumulator in %s (%s, %s)\n",
		       f->name, f->issue, f->a, f->b, f->acc, prov_name(f->prov), f->source);
		for (int j = 0; j < f->nshapes; j++) {
			const MmaShape *s = &f->shapes[j];
			printf("   ");
			print_dtypes(s->dtypes);
			printf(": M");
			for (int k = 0; k < s->nm; k++)
				printf("%s%d", k ? "|" : " ", s->m[k]);
			if (s->nmax > s->nmin)
				printf(", N %d..%d step %d, K %d\n", s->nmin, s->nmax, s->nstep, s->k);
			else
				printf(", N %d, K %d\n", s->nmin, s->k);
		}
	}
	if (d->sfu.present)
		printf("  sfu functions: %s%s\n", d->sfu.functions,
		       d->sfu.emulation ? " (exp2 may be emulated on the FMA pipes)" : "");
	for (int i = 0; i < d->nengines; i++) {
		const Num *o = &d->engines[i].offload;
		char share[64] = "";
		if (num_has(o) && o->v < 1)
			snprintf(share, sizeof share, " (%.3g of their work)", o->v);
		printf("  engine %s: %s%s%s%s%s\n", d->engines[i].name, d->engines[i].kind,
		       d->engines[i].multicast ? ", multicast" : "", d->engines[i].reduce ? ", reduce" : "",
		       num_has(o) && o->v > 0 ? ", offloaded from the compute units" : num_has(o) ? ", offload off" : "",
		       num_has(o) && o->v > 0 ? share : "");
	}
	if (num_has(&d->cluster_portable))
		printf("  clusters%s\n", d->dsmem ? " with distributed shared memory" : "");
	if (d->formats) {
		printf("  formats:");
		print_dtypes(d->formats);
		printf("\n");
	}
	if (d->block_formats) {
		printf("  block-scaled:");
		print_dtypes(d->block_formats);
		printf(" (scales in %s)\n", d->scale_space);
	}
	if (d->hw_model)
		printf("  hardwired: %s at --precision %s, dims %s (%s); weights cost no memory traffic and "
		       "cannot change after tape-out\n", d->hw_model, d->hw_precision, d->hw_dims, d->hw_source);
}

static void print_machine(const Machine *m)
{
	printf("machine %s (%s): %s\n", m->name, m->status, m->description);
	printf("file %s\nhash %s", m->path, m->hash);
	if (m->noverrides)
		printf(" (file %s with %d override%s)", m->file_hash, m->noverrides,
		       m->noverrides > 1 ? "s" : "");
	printf("\n");
	for (int i = 0; i < m->ndevs; i++)
		print_device(m, &m->devs[i]);
	for (int i = 0; i < m->nlinks; i++) {
		const Link *l = &m->links[i];
		char prefix[128], shape[64] = "";
		for (int k = 0, n = 0; k < l->ndims; k++)
			n += snprintf(shape + n, sizeof shape - (size_t)n, "%s%d", k ? "x" : " ", l->dims[k]);
		printf("\nlink %s: %s <-> %s, %s %s%s%s%s; bandwidth per device, %s (%s, %s)\n", l->id,
		       l->from->id, l->to->id, l->kind, l->twist ? "twisted " : "", topo_name(l->topo), shape,
		       l->wrap ? " with wraparound" : "", l->bidi ? "both directions" : "each direction",
		       prov_name(l->prov), l->source);
		snprintf(prefix, sizeof prefix, "%s.", l->id);
		print_fields(m, prefix);
	}
	if (m->nrefs)
		printf("\nsources:\n");
	for (int i = 0; i < m->nrefs; i++)
		printf("  %-18s %s\n", m->refs[i].key, m->refs[i].url);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: aicc machines [NAME|FILE.xml [--set path=value]... [--fields]]\n\n"
		   "Without NAME, lists the built-in machines.  With NAME, prints its description with\n"
		   "units, kinds and sources after applying the --set overrides (docs/machines.md);\n"
		   "--fields prints only the settable paths and their values.\n");
}

int cmd_machines(int argc, char **argv)
{
	const char *name = NULL, *sets[64];
	int nsets = 0, fields = 0;
	for (int i = 1; i < argc; i++) {
		const char *v;
		int r = opt_value(argc, argv, &i, "--set", &v);
		if (r < 0)
			return EXIT_USER;
		if (r > 0) {
			if (nsets == 64) {
				drv_error("too many --set options");
				return EXIT_USER;
			}
			sets[nsets++] = v;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return EXIT_OK;
		} else if (strcmp(argv[i], "--fields") == 0) {
			fields = 1;
		} else if (argv[i][0] == '-' || name) {
			drv_error("unexpected argument '%s' (see aicc machines --help)", argv[i]);
			return EXIT_USER;
		} else {
			name = argv[i];
		}
	}
	if (!name) {
		if (nsets || fields) {
			drv_error("--set and --fields need a machine name");
			return EXIT_USER;
		}
		return list_machines();
	}
	Machine *m = machine_load(name, stderr);
	if (!m)
		return EXIT_USER;
	for (int i = 0; i < nsets; i++) {
		char path[256], err[1024];
		const char *eq = strchr(sets[i], '=');
		if (!eq || eq == sets[i] || (size_t)(eq - sets[i]) >= sizeof path) {
			drv_error("--set wants path=value, got '%s'", sets[i]);
			machine_free(m);
			return EXIT_USER;
		}
		memcpy(path, sets[i], (size_t)(eq - sets[i]));
		path[eq - sets[i]] = 0;
		if (machine_set(m, path, eq + 1, err, sizeof err) < 0) {
			drv_error("%s", err);
			machine_free(m);
			return EXIT_USER;
		}
	}
	if (fields) {
		for (int i = 0; i < machine_nfields(m); i++) {
			const Num *n;
			const char *path = machine_field_path(m, i, &n);
			if (num_has(n))
				printf("%s %.17g\n", path, n->v);
		}
	} else {
		print_machine(m);
	}
	machine_free(m);
	return EXIT_OK;
}
