/* runtime/kernels.c: the kernel dispatch table and operator names, expanded from ir/ops.def.
 *
 * rt_kernel(op) returns the reference kernel `rk_<kernel>` of the operator's row; the kernels
 * live by family in the files of runtime/kernels/.  Operators that never execute by themselves (Call is
 * expanded by the compiler) get rk_none, which reports an error.
 */
#include <string.h>

#include "runtime/kernels.h"
#include "runtime/kernels/kernels_impl.h"

static const char *const op_names[RT_OP_COUNT] = {
#define OP(name, imin, imax, omin, omax, shape, flops, flags, cls, lookup, kernel, sem) [RT_OP_##name] = #name,
#include "ir/ops.def"
#undef OP
};

static const RtKernelFn kernels[RT_OP_COUNT] = {
#define OP(name, imin, imax, omin, omax, shape, flops, flags, cls, lookup, kernel, sem) [RT_OP_##name] = rk_##kernel,
#include "ir/ops.def"
#undef OP
};

int rk_none(const RtKernelArgs *a, RtError *e)
{
	return rt_errorf(e, RT_EINTERNAL, "Call must be expanded before execution");
}

const char *rt_op_name(RtOp op)
{
	return (unsigned)op < RT_OP_COUNT ? op_names[op] : "?";
}

RtOp rt_op_lookup(const char *name)
{
	for (int i = 0; i < RT_OP_COUNT; i++)
		if (strcmp(op_names[i], name) == 0)
			return (RtOp)i;
	return RT_OP_COUNT;
}

RtKernelFn rt_kernel(RtOp op)
{
	return (unsigned)op < RT_OP_COUNT ? kernels[op] : rk_none;
}

static const char *const fp8_scale_names[RT_FP8_COUNT] = { "none", "tensor", "1x128", "128x128" };

const char *rt_fp8_scale_name(RtFp8Scale s)
{
	return (unsigned)s < RT_FP8_COUNT ? fp8_scale_names[s] : "?";
}

RtFp8Scale rt_fp8_scale_lookup(const char *name)
{
	for (int i = 0; i < RT_FP8_COUNT; i++)
		if (strcmp(fp8_scale_names[i], name) == 0)
			return (RtFp8Scale)i;
	return RT_FP8_COUNT;
}
