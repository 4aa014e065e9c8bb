/* testsuite/unit/test_optypes.c: cmocka tests of the operand dtype contracts (ir/optypes.def)
 * as the plan verifier applies them.
 *
 * Every row of ir/ops.def is walked.  For each operator, a one-instruction plan whose operands
 * take dtypes their contract allows (with the fewest and with the most inputs the row admits)
 * must be accepted by the plan reader; then each operand in turn is given a dtype its contract
 * refuses (outside its set, or unlike the operand that fixed its type variable, or not the dtype
 * the attribute `to` names) and the reader must refuse the plan, before anything runs, with
 * "LINE: error: OP input|output J ('NAME') is DTYPE, not ... allowed type(s) LIST".  An operator
 * none of whose operands can be given a wrong dtype fails the test: every operator has a
 * contract.  Call is never a kernel (targets flatten calls) and is refused as such.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/plan.h"

static const struct { const char *name; int imin, imax, omin, omax; } rows[RT_OP_COUNT] = {
#define OP(name, imin, imax, omin, omax, shape, flops, flags, cls, lookup, kernel, sem) { #name, imin, imax, omin, omax },
#include "ir/ops.def"
#undef OP
};

#define MAXOP 16

static int same_type(DType a, DType b)
{
	return a == b || (rt_dtype_isfloat(a) && rt_dtype_isfloat(b) && rt_dtypes[a].storage == rt_dtypes[b].storage);
}

/* A dtype of mask m, preferring the usual ones. */
static DType pick(uint64_t m)
{
	static const DType pref[] = { DT_F32, DT_I64, DT_BOOL, DT_I32, DT_U8, DT_I8 };
	for (size_t i = 0; i < sizeof pref / sizeof pref[0]; i++)
		if (m >> pref[i] & 1)
			return pref[i];
	for (int d = 1; d < DT_COUNT; d++)
		if (m >> d & 1)
			return (DType)d;
	return DT_INVALID;
}

static uint64_t all_types(void)
{
	uint64_t m = 0;
	for (int d = 1; d < DT_COUNT; d++)
		m |= UINT64_C(1) << d;
	return m;
}

/* The plan text of one `op` instruction over operands of dtypes dt[0..nin+nout). */
static char *plan_text(RtOp op, int nin, int nout, const DType *dt, int with_to)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	fprintf(f, "aicc-plan 1\ntarget reference\nmachine ref hash=00000000deadbeef\n"
		"device cpu kind=cpu peak=1e11 overhead=1e-6\n"
		"space cpu.dram device=cpu capacity=65536 bandwidth=5e10\n"
		"unit cpu.core device=cpu kind=compute\n");
	int64_t dims[1] = { 32 };
	for (int k = 0; k < nin + nout; k++)
		fprintf(f, "buffer b%d space=cpu.dram offset=%d size=%lld dtype=%s shape=[32] format=row\n", k, 512 * k,
			(long long)plan_format_bytes("row", dt[k], 1, dims), rt_dtype_name(dt[k]));
	for (int k = 0; k < nin; k++)
		fprintf(f, "input b%d buffer=b%d\n", k, k);
	for (int k = nin; k < nin + nout; k++)
		fprintf(f, "output b%d buffer=b%d\n", k, k);
	fprintf(f, "stream main device=cpu count=1\n  kernel %s in=[", plan_op_name(op));
	for (int k = 0; k < nin; k++)
		fprintf(f, "%sb%d", k ? "," : "", k);
	fprintf(f, "] out=[");
	for (int k = nin; k < nin + nout; k++)
		fprintf(f, "%sb%d", k > nin ? "," : "", k);
	fprintf(f, "]%s\nend\n", with_to ? " a.to=\"f32\"" : "");
	fclose(f);
	return buf;
}

/* Valid dtypes for every operand of op: each the preferred dtype of its set, or its type
 * variable's; 1 when an operand is `to` (the plan then says to=f32). */
static int valid_types(RtOp op, int nin, int nout, DType *dt, PlanOperandType *t)
{
	int with_to = 0;
	for (int k = 0; k < nin + nout; k++) {
		assert_int_equal(plan_operand_type(op, nin, k, &t[k]), 0);
		dt[k] = pick(t[k].allowed);
		for (int j = 0; j < k && t[k].var; j++)
			if (t[j].var == t[k].var) {
				dt[k] = dt[j];
				break;
			}
		if (t[k].to)
			with_to = 1, dt[k] = DT_F32;
		assert_int_not_equal(dt[k], DT_INVALID);
		assert_true(t[k].allowed >> dt[k] & 1);
	}
	return with_to;
}

/* Refuses every wrong dtype it can give one operand at a time; returns how many it tried. */
static int walk_wrong(RtOp op, int nin, int nout)
{
	DType dt[MAXOP];
	PlanOperandType t[MAXOP];
	int with_to = valid_types(op, nin, nout, dt, t), tried = 0;
	RtError e = { 0 };
	char *text = plan_text(op, nin, nout, dt, with_to);
	Plan *p = plan_parse("t.aip", text, strlen(text), &e);
	if (op == RT_OP_Call) {
		assert_null(p);
		assert_non_null(strstr(e.msg, "Call cannot be a kernel"));
		free(text);
		return 1;
	}
	if (!p)
		fail_msg("%s with %d inputs: the valid plan is refused: %s", rows[op].name, nin, e.msg);
	plan_free(p);
	free(text);
	for (int k = 0; k < nin + nout; k++) {
		uint64_t bad = all_types() & ~t[k].allowed;
		int bound = -1;
		for (int j = 0; j < k && t[k].var && bound < 0; j++)
			if (t[j].var == t[k].var)
				bound = j;
		if (t[k].to)      /* anything but the dtype `to` names */
			bad = all_types() & ~(UINT64_C(1) << DT_F32);
		else if (bound >= 0)
			for (int d = 1; d < DT_COUNT; d++)
				if (!same_type((DType)d, dt[bound]))
					bad |= UINT64_C(1) << d;
		if (!bad)
			continue;
		DType keep = dt[k];
		dt[k] = pick(bad);
		text = plan_text(op, nin, nout, dt, with_to);
		memset(&e, 0, sizeof e);
		p = plan_parse("t.aip", text, strlen(text), &e);
		char want[200];
		int isout = k >= nin;
		snprintf(want, sizeof want, "t.aip:%d: error: %s %s %d ('b%d') is %s, not ", 8 + 2 * (nin + nout),
			 rows[op].name, isout ? "output" : "input", isout ? k - nin : k, k, rt_dtype_name(dt[k]));
		if (p || !strstr(e.msg, want) || !strstr(e.msg, "allowed type") ||
		    !strstr(strstr(e.msg, "allowed type"), rt_dtype_name(keep)))
			fail_msg("%s operand %d as %s: expected a refusal \"%s... allowed type(s) ...%s...\", got %s",
				 rows[op].name, k, rt_dtype_name(dt[k]), want, rt_dtype_name(keep), p ? "acceptance" : e.msg);
		plan_free(p);
		free(text);
		dt[k] = keep;
		tried++;
	}
	return tried;
}

static void every_op_refuses_wrong_dtypes(void **state)
{
	(void)state;
	int total = 0;
	for (int op = 0; op < RT_OP_COUNT; op++) {
		int nmin = rows[op].imin, nmax = rows[op].imax < 0 ? rows[op].imin + 2 : rows[op].imax;
		int nout = rows[op].omax < 0 ? rows[op].omin + 1 : rows[op].omax;
		if (nout < 1)
			nout = 1;
		assert_true(nmax + nout <= MAXOP);
		int tried = walk_wrong((RtOp)op, nmin, nout);
		if (nmax != nmin)
			tried += walk_wrong((RtOp)op, nmax, nout);
		if (!tried)
			fail_msg("%s: no operand of it can be given a wrong dtype: ir/optypes.def gives it no contract",
				 rows[op].name);
		total += tried;
	}
	print_message("%d wrong operand dtypes refused over %d operators\n", total, (int)RT_OP_COUNT);
	assert_true(total > 2 * RT_OP_COUNT);
}

/* The rows of optypes.def parse, and the contracts say what the ONNX specs say for a few. */
static void contracts_parse(void **state)
{
	(void)state;
	PlanOperandType t;
	for (int op = 0; op < RT_OP_COUNT; op++)
		for (int k = 0; k < rows[op].imin + rows[op].omin; k++)
			assert_int_equal(plan_operand_type((RtOp)op, rows[op].imin, k, &t), 0);
	assert_int_equal(plan_operand_type(RT_OP_Gather, 2, 1, &t), 0);       /* indices: tind */
	assert_true(t.allowed == (UINT64_C(1) << DT_I32 | UINT64_C(1) << DT_I64));
	assert_int_equal(plan_operand_type(RT_OP_Reshape, 2, 1, &t), 0);      /* shape: int64 */
	assert_true(t.allowed == UINT64_C(1) << DT_I64);
	assert_int_equal(plan_operand_type(RT_OP_Add, 2, 2, &t), 0);          /* C: T of A and B */
	assert_int_equal(t.var, 'T');
	assert_false(t.allowed >> DT_BOOL & 1);
	assert_int_equal(plan_operand_type(RT_OP_Concat, 7, 6, &t), 0);       /* variadic: the last token */
	assert_int_equal(t.var, 'T');
	assert_int_equal(plan_operand_type(RT_OP_Cast, 1, 1, &t), 0);
	assert_int_equal(t.to, 1);
	assert_int_equal(plan_operand_type(RT_OP_Add, 2, -1, &t), -1);
	assert_int_equal(plan_operand_type(RT_OP_COUNT, 2, 0, &t), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(contracts_parse),
		cmocka_unit_test(every_op_refuses_wrong_dtypes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
