/* tools/init_unbound.c: `aicc compile --init-unbound KIND[:SCALE[:SEED]]` gives every unbound
 * parameter of a module a seeded initialiser, so a full architecture with small bound dims can
 * execute (the examples/ models declare their weights without data).
 *
 * Requires a parsed module (before verification and shape inference; only node inputs and call
 * edges are read).  Provides drv_init_unbound (tools/plan_build.h).  The initialiser follows how
 * the parameter is used, found by walking its uses through call and repeat edges into callees:
 * the Scale of a normalisation (and BatchNormalization's variance) is ones, a normalisation's
 * bias and mean, the bias of Conv and Gemm, TopKRouter's selection bias and any other rank-1
 * parameter added to a value are zeros, the cos/sin tables of RotaryEmbedding are uniform in
 * [-1, 1], and everything else (projections, embeddings, positions) is KIND: normal with std
 * SCALE or uniform in [-SCALE, SCALE].  Activations so stay finite through many layers.  Each
 * parameter's seed is a hash of SEED, its graph and its name, so it does not depend on the order
 * of declarations; the instance mixing of repeated graphs then gives every layer its own
 * weights.  The same spec applied to the same module gives the same initialisers, which is how
 * `aicc run --check` rebuilds the reference plan (the plan's source line records the spec).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/driver.h"
#include "tools/plan_build.h"

typedef enum Role { ROLE_WEIGHT, ROLE_ONES, ROLE_ZEROS, ROLE_TABLE } Role;

typedef struct InitSpec {
	InitKind kind;           /* INIT_NORMAL or INIT_UNIFORM */
	double scale;
	uint64_t seed;
} InitSpec;

/* The role of input slot i of node n, or -1 when the slot says nothing (a plain operand). */
static int slot_role(const Node *n, int i, const Value *v)
{
	switch (n->op) {
	case OP_RMSNormalization:
		return i == 1 ? ROLE_ONES : -1;
	case OP_LayerNormalization:
	case OP_GroupNormalization:
		return i == 1 ? ROLE_ONES : i == 2 ? ROLE_ZEROS : -1;
	case OP_BatchNormalization:
		return i == 1 || i == 4 ? ROLE_ONES : i >= 2 ? ROLE_ZEROS : -1;
	case OP_Conv:
	case OP_Gemm:
		return i == 2 ? ROLE_ZEROS : -1;
	case OP_TopKRouter:
		return i == 1 ? ROLE_ZEROS : -1;
	case OP_RotaryEmbedding:
		return i == 1 || i == 2 ? ROLE_TABLE : -1;
	case OP_Add:
		return v->type.rank == 1 ? ROLE_ZEROS : -1;
	default:
		return -1;
	}
}

/* The role of value v of graph g: its first use that tells, following calls into callees. */
static int value_role(const Graph *g, const Value *v, int depth)
{
	if (depth > 64)
		return -1;
	ir_foreach_node(g, n) {
		if (n->dead)
			continue;
		for (int i = 0; i < n->nin; i++) {
			if (n->in[i] != v)
				continue;
			int r = n->op == OP_Call ? (n->callee && i < n->callee->nin
						    ? value_role(n->callee, n->callee->inputs[i], depth + 1) : -1)
				: slot_role(n, i, v);
			if (r >= 0)
				return r;
		}
	}
	return -1;
}

/* FNV-1a over the spec's seed, the graph's and the parameter's names: a 31-bit seed. */
static uint64_t param_seed(uint64_t seed, const char *graph, const char *name)
{
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < 8; i++)
		h = (h ^ ((seed >> (8 * i)) & 0xff)) * 1099511628211ull;
	for (const char *s = graph; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	h = (h ^ '/') * 1099511628211ull;
	for (const char *s = name; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (h ^ (h >> 31)) & 0x7fffffff;
}

/* Parses "normal", "normal:0.02", "uniform:0.05:7"; -1 with a message when malformed. */
static int parse_spec(const char *spec, InitSpec *s)
{
	const char *colon = strchr(spec, ':');
	size_t klen = colon ? (size_t)(colon - spec) : strlen(spec);
	s->scale = 0.02;
	s->seed = 0;
	if (klen == 6 && strncmp(spec, "normal", 6) == 0)
		s->kind = INIT_NORMAL;
	else if (klen == 7 && strncmp(spec, "uniform", 7) == 0)
		s->kind = INIT_UNIFORM;
	else
		goto bad;
	if (!colon)
		return 0;
	char *end;
	errno = 0;
	s->scale = strtod(colon + 1, &end);
	if (end == colon + 1 || errno || !(s->scale >= 0 && s->scale <= 1e6) || (*end && *end != ':'))
		goto bad;
	if (!*end)
		return 0;
	const char *sd = end + 1;
	errno = 0;
	s->seed = strtoull(sd, &end, 10);
	if (end == sd || *end || errno || *sd == '-' || s->seed > INT32_MAX)
		goto bad;
	return 0;
bad:
	drv_error("--init-unbound expects normal|uniform[:SCALE[:SEED]] (SCALE >= 0, SEED < 2^31), got '%s'", spec);
	return -1;
}

int drv_init_unbound(Module *m, const char *spec)
{
	InitSpec s;
	if (parse_spec(spec, &s) < 0)
		return -1;
	for (Graph *g = m->graphs; g; g = g->next)
		for (int i = 0; i < g->nparams; i++) {
			Value *v = g->params[i];
			if (v->init && v->init->kind != INIT_NONE)
				continue;
			ParamInit *pi = arena_alloc(m->arena, sizeof *pi);
			int role = value_role(g, v, 0);
			pi->seed = param_seed(s.seed, g->name, v->name);
			if (role == ROLE_ONES || role == ROLE_ZEROS) {
				pi->kind = INIT_FILL;
				pi->a = role == ROLE_ONES;
			} else if (role == ROLE_TABLE) {
				pi->kind = INIT_UNIFORM;
				pi->a = -1;
				pi->b = 1;
			} else if (s.kind == INIT_NORMAL) {
				pi->kind = INIT_NORMAL;
				pi->b = s.scale;
			} else {
				pi->kind = INIT_UNIFORM;
				pi->a = -s.scale;
				pi->b = s.scale;
			}
			if (pi->kind == INIT_FILL)
				pi->seed = 0;
			v->init = pi;
		}
	return 0;
}
