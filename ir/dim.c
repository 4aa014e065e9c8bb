/* ir/dim.c: symbolic dimensions as interned polynomials over the module's dimension symbols.
 *
 * A symbolic Dim points to a Poly: a sum of terms c * s1 * s2 * ... (at most DIM_MAXDEG symbols
 * per term, at most DIM_MAXTERMS terms), kept in a canonical order and hash-consed per module, so
 * two equal expressions are the same pointer and dim_eq is a comparison.  Constants never become
 * Polys.  All arithmetic is overflow-checked (__builtin_*_overflow).
 */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

enum { DIM_MAXDEG = 4, DIM_MAXTERMS = 16 };

typedef struct Term {
	int64_t c;
	int deg;
	int sym[DIM_MAXDEG];   /* ascending symbol ids; deg entries used */
} Term;

struct Poly {
	int nterms;
	uint64_t hash;
	const Poly *chain;
	Term t[];
};

typedef struct PolyTab {
	const Poly **b;
	size_t nb, count;
} PolyTab;

/* Orders monomials: higher degree first, then by symbol ids. */
static int mono_cmp(const Term *a, const Term *b)
{
	if (a->deg != b->deg)
		return b->deg - a->deg;
	for (int i = 0; i < a->deg; i++)
		if (a->sym[i] != b->sym[i])
			return a->sym[i] - b->sym[i];
	return 0;
}

static int term_qcmp(const void *a, const void *b) { return mono_cmp(a, b); }

/* Sorts, merges equal monomials and drops zero terms; -1 on overflow. */
static int normalize(Term *t, int *n)
{
	qsort(t, (size_t)*n, sizeof *t, term_qcmp);
	int k = 0;
	for (int i = 0; i < *n; i++) {
		if (k > 0 && mono_cmp(&t[k - 1], &t[i]) == 0) {
			if (__builtin_add_overflow(t[k - 1].c, t[i].c, &t[k - 1].c))
				return -1;
		} else
			t[k++] = t[i];
		if (k > 0 && t[k - 1].c == 0 && (i + 1 == *n || mono_cmp(&t[k - 1], &t[i + 1]) != 0))
			k--;
	}
	*n = k;
	return 0;
}

static uint64_t hash_terms(const Term *t, int n)
{
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < n; i++) {
		h = (h ^ (uint64_t)t[i].c) * 1099511628211ull;
		h = (h ^ (uint64_t)t[i].deg) * 1099511628211ull;
		for (int j = 0; j < t[i].deg; j++)
			h = (h ^ (uint64_t)t[i].sym[j]) * 1099511628211ull;
	}
	return h;
}

static PolyTab *tab(Module *m)
{
	if (!m->polys) {
		PolyTab *pt = arena_alloc(m->arena, sizeof *pt);
		pt->nb = 64;
		pt->b = arena_alloc(m->arena, pt->nb * sizeof *pt->b);
		m->polys = pt;
	}
	return m->polys;
}

static void grow(Module *m, PolyTab *pt)
{
	size_t nb = pt->nb * 2;
	const Poly **b = arena_alloc(m->arena, nb * sizeof *b);
	for (size_t i = 0; i < pt->nb; i++)
		for (const Poly *p = pt->b[i], *next; p; p = next) {
			next = p->chain;
			((Poly *)p)->chain = b[p->hash & (nb - 1)];
			b[p->hash & (nb - 1)] = p;
		}
	pt->b = b;
	pt->nb = nb;
}

/* Builds the Dim for normalized terms: a constant when no term has symbols. */
static Dim make(Module *m, const Term *t, int n)
{
	if (n == 0)
		return dim_c(0);
	if (n == 1 && t[0].deg == 0)
		return dim_c(t[0].c);
	PolyTab *pt = tab(m);
	uint64_t h = hash_terms(t, n);
	for (const Poly *p = pt->b[h & (pt->nb - 1)]; p; p = p->chain)
		if (p->hash == h && p->nterms == n && memcmp(p->t, t, (size_t)n * sizeof *t) == 0)
			return (Dim){ 0, p };
	if (pt->count * 2 >= pt->nb)
		grow(m, pt);
	Poly *p = arena_alloc(m->arena, sizeof *p + (size_t)n * sizeof *t);
	p->nterms = n;
	p->hash = h;
	memcpy(p->t, t, (size_t)n * sizeof *t);
	p->chain = pt->b[h & (pt->nb - 1)];
	pt->b[h & (pt->nb - 1)] = p;
	pt->count++;
	return (Dim){ 0, p };
}

/* Expands d into terms (zero-initialised so that memcmp of terms is exact). */
static int terms_of(Dim d, Term *t)
{
	if (!d.p) {
		memset(t, 0, sizeof *t);
		t[0].c = d.k;
		return d.k ? 1 : 0;
	}
	memcpy(t, d.p->t, (size_t)d.p->nterms * sizeof *t);
	return d.p->nterms;
}

Dim dim_sym(Module *m, const char *name)
{
	Term t;
	memset(&t, 0, sizeof t);
	t.c = 1;
	t.deg = 1;
	t.sym[0] = ir_sym_intern(m, name);
	return make(m, &t, 1);
}

static int addsub(Module *m, Dim a, Dim b, int neg, Dim *out)
{
	if (!a.p && !b.p) {
		int64_t r;
		if (neg ? __builtin_sub_overflow(a.k, b.k, &r) : __builtin_add_overflow(a.k, b.k, &r))
			return -1;
		*out = dim_c(r);
		return 0;
	}
	Term t[2 * DIM_MAXTERMS];
	int na = terms_of(a, t), nb = terms_of(b, t + na);
	if (neg)
		for (int i = na; i < na + nb; i++)
			if (__builtin_sub_overflow((int64_t)0, t[i].c, &t[i].c))
				return -1;
	int n = na + nb;
	if (normalize(t, &n) < 0 || n > DIM_MAXTERMS)
		return -1;
	*out = make(m, t, n);
	return 0;
}

int dim_add(Module *m, Dim a, Dim b, Dim *out) { return addsub(m, a, b, 0, out); }
int dim_sub(Module *m, Dim a, Dim b, Dim *out) { return addsub(m, a, b, 1, out); }

static int sym_cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

int dim_mul(Module *m, Dim a, Dim b, Dim *out)
{
	if (!a.p && !b.p) {
		int64_t r;
		if (__builtin_mul_overflow(a.k, b.k, &r))
			return -1;
		*out = dim_c(r);
		return 0;
	}
	Term ta[DIM_MAXTERMS], tb[DIM_MAXTERMS], t[DIM_MAXTERMS * DIM_MAXTERMS];
	int na = terms_of(a, ta), nb = terms_of(b, tb), n = 0;
	for (int i = 0; i < na; i++)
		for (int j = 0; j < nb; j++) {
			Term *r = &t[n++];
			memset(r, 0, sizeof *r);
			if (__builtin_mul_overflow(ta[i].c, tb[j].c, &r->c))
				return -1;
			if (ta[i].deg + tb[j].deg > DIM_MAXDEG)
				return -1;
			r->deg = ta[i].deg + tb[j].deg;
			memcpy(r->sym, ta[i].sym, (size_t)ta[i].deg * sizeof(int));
			memcpy(r->sym + ta[i].deg, tb[j].sym, (size_t)tb[j].deg * sizeof(int));
			qsort(r->sym, (size_t)r->deg, sizeof(int), sym_cmp);
		}
	if (normalize(t, &n) < 0 || n > DIM_MAXTERMS)
		return -1;
	*out = make(m, t, n);
	return 0;
}

/* Removes the symbols of monomial d from t (multiset difference); 0 if t lacks one. */
static int mono_divides(const Term *d, Term *t)
{
	int sym[DIM_MAXDEG], n = 0, j = 0;
	for (int i = 0; i < t->deg; i++) {
		if (j < d->deg && d->sym[j] == t->sym[i])
			j++;
		else
			sym[n++] = t->sym[i];
	}
	if (j != d->deg)
		return 0;
	memset(t->sym, 0, sizeof t->sym);
	memcpy(t->sym, sym, (size_t)n * sizeof(int));
	t->deg = n;
	return 1;
}

int dim_div(Module *m, Dim a, Dim b, Dim *out)
{
	if (!b.p && b.k == 0)
		return -1;
	if (dim_eq(a, b)) {
		*out = dim_c(1);
		return 0;
	}
	Term ta[DIM_MAXTERMS], tb[DIM_MAXTERMS];
	int na = terms_of(a, ta), nb = terms_of(b, tb);
	if (nb == 1) {  /* divide by a monomial c * s1 * ... */
		for (int i = 0; i < na; i++) {
			if (ta[i].c % tb[0].c != 0 || !mono_divides(&tb[0], &ta[i]))
				return -1;
			ta[i].c /= tb[0].c;
		}
		if (normalize(ta, &na) < 0)
			return -1;
		*out = make(m, ta, na);
		return 0;
	}
	/* a = q * b for a constant q: same monomials, proportional coefficients */
	if (na != nb || na == 0)
		return -1;
	int64_t q = 0;
	for (int i = 0; i < na; i++) {
		if (mono_cmp(&ta[i], &tb[i]) != 0 || ta[i].c % tb[i].c != 0)
			return -1;
		if (i == 0)
			q = ta[i].c / tb[i].c;
		else if (ta[i].c / tb[i].c != q)
			return -1;
	}
	*out = dim_c(q);
	return 0;
}

int dim_subst(Module *m, Dim a, Dim *out)
{
	if (!a.p) {
		*out = a;
		return 0;
	}
	Dim acc = dim_c(0);
	for (int i = 0; i < a.p->nterms; i++) {
		const Term *t = &a.p->t[i];
		Dim term = dim_c(t->c);
		for (int j = 0; j < t->deg; j++) {
			int s = t->sym[j];
			Dim f = m->symbound[s] ? dim_c(m->symval[s]) : dim_sym(m, m->symnames[s]);
			if (dim_mul(m, term, f, &term) < 0)
				return -1;
		}
		if (dim_add(m, acc, term, &acc) < 0)
			return -1;
	}
	*out = acc;
	return 0;
}

void dim_mark_syms(Dim a, unsigned char *used)
{
	for (int i = 0; a.p && i < a.p->nterms; i++)
		for (int j = 0; j < a.p->t[i].deg; j++)
			used[a.p->t[i].sym[j]] = 1;
}

char *dim_str(const Module *m, Dim a, char *buf, size_t n)
{
	if (!a.p) {
		snprintf(buf, n, "%lld", (long long)a.k);
		return buf;
	}
	size_t len = 0;
	buf[0] = 0;
	for (int i = 0; i < a.p->nterms && len < n; i++) {
		const Term *t = &a.p->t[i];
		int64_t c = t->c;
		const char *sign = "";
		if (c < 0) {
			sign = "-";
			c = -c;
		} else if (i > 0)
			sign = "+";
		len += (size_t)snprintf(buf + len, n - len, "%s", sign);
		int first = 1;
		if (c != 1 || t->deg == 0) {
			len += (size_t)snprintf(buf + len < buf + n ? buf + len : buf + n - 1, len < n ? n - len : 1,
						"%llu", (unsigned long long)c);
			first = 0;
		}
		for (int j = 0; j < t->deg && len < n; j++) {
			len += (size_t)snprintf(buf + len, n - len, "%s%s", first ? "" : "*",
						m->symnames[t->sym[j]]);
			first = 0;
		}
	}
	return buf;
}
