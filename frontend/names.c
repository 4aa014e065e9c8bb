/* frontend/names.c: the parser's string-keyed hash tables (values of a graph, graphs, dimension
 * names) and the edit distance behind "did you mean" suggestions.
 *
 * Open addressing with linear probing over a power-of-two table kept at most half full, so a
 * lookup is O(1) whatever the size of the graph.  Keys are not copied: they live in the module's
 * arena, which outlives the table.
 */
#include <stdlib.h>
#include <string.h>

#include "frontend/parse.h"

void *fe_grow(void *a, int *cap, size_t elem)
{
	int nc = *cap ? *cap * 2 : 16;
	void *q = realloc(a, (size_t)nc * elem);
	if (!q) {
		fputs("aicc: out of memory\n", stderr);
		abort();
	}
	*cap = nc;
	return q;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The slot holding key, or the empty slot where it belongs. */
static NameEnt *slot(NameEnt *e, size_t cap, const char *key, uint64_t h)
{
	for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1))
		if (!e[i].key || (e[i].hash == h && strcmp(e[i].key, key) == 0))
			return &e[i];
}

void *names_get(const NameTab *t, const char *key)
{
	if (!t->cap)
		return NULL;
	NameEnt *e = slot(t->e, t->cap, key, hash_str(key));
	return e->key ? e->val : NULL;
}

static void rehash(NameTab *t)
{
	size_t cap = t->cap ? t->cap * 2 : 64;
	NameEnt *e = calloc(cap, sizeof *e);
	if (!e) {
		fputs("aicc: out of memory\n", stderr);
		abort();
	}
	for (size_t i = 0; i < t->cap; i++)
		if (t->e[i].key)
			*slot(e, cap, t->e[i].key, t->e[i].hash) = t->e[i];
	free(t->e);
	t->e = e;
	t->cap = cap;
}

void names_put(NameTab *t, const char *key, void *val)
{
	if ((t->n + 1) * 2 > t->cap)
		rehash(t);
	uint64_t h = hash_str(key);
	NameEnt *e = slot(t->e, t->cap, key, h);
	if (!e->key)
		t->n++;
	*e = (NameEnt){ key, h, val };
}

void names_clear(NameTab *t)
{
	free(t->e);
	memset(t, 0, sizeof *t);
}

/* Case-insensitive Levenshtein distance; names longer than 64 bytes are never close. */
int fe_edit_distance(const char *a, const char *b)
{
	int la = (int)strlen(a), lb = (int)strlen(b);
	if (la > 64 || lb > 64)
		return 1000;
	int d[65][65];
	for (int i = 0; i <= la; i++)
		d[i][0] = i;
	for (int j = 0; j <= lb; j++)
		d[0][j] = j;
	for (int i = 1; i <= la; i++)
		for (int j = 1; j <= lb; j++) {
			int best = d[i - 1][j - 1] + ((a[i - 1] | 0x20) != (b[j - 1] | 0x20));
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			d[i][j] = best;
		}
	return d[la][lb];
}

const char *names_suggest(const NameTab *t, const char *name)
{
	int len = (int)strlen(name);
	int limit = len <= 2 ? 0 : len < 6 ? 1 : len / 3;
	const char *best = NULL;
	int bestd = limit + 1;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->e[i].key)
			continue;
		int d = fe_edit_distance(name, t->e[i].key);
		if (d < bestd || (d == bestd && best && strcmp(t->e[i].key, best) < 0)) {
			bestd = d;
			best = t->e[i].key;
		}
	}
	return best;
}
