/* runtime/blas.c: decides whether OpenBLAS picked a core too weak for this CPU.
 *
 * OpenBLAS's DYNAMIC_ARCH table in 0.3.21 does not know Emerald/Granite Rapids model numbers
 * and falls back to "Prescott" (SSE3 kernels).  When the reported core is such a generic
 * fallback but cpuid shows AVX-512 (F, BW, VL, DQ, enabled by the OS in XCR0) we ask for
 * "SkylakeX"; with AVX2+FMA only, "Haswell".  Any other core name is trusted.
 * Sources: OpenBLAS driver/others/dynamic.c (get_coretype, OPENBLAS_CORETYPE); Intel SDM
 * vol. 2A, CPUID leaf 1 and 7, XGETBV.
 */
#include "runtime/blas.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cblas.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

/* Core names OpenBLAS uses when it does not recognise a CPU, or for pre-AVX2 parts. */
static int generic_core(const char *name)
{
	static const char *const weak[] = { "Prescott", "Core2", "Penryn", "Dunnington", "Nehalem",
		"Atom", "Katmai", "Coppermine", "Northwood", "Banias", "Unknown", "generic", NULL };
	for (int i = 0; weak[i]; i++)
		if (strcasecmp(name, weak[i]) == 0)
			return 1;
	return 0;
}

const char *rt_blas_coretype_for(const char *corename, const RtCpuInfo *c)
{
	if (!corename || !generic_core(corename))
		return NULL;
	if (c->os_avx512 && c->avx512f && c->avx512bw && c->avx512vl && c->avx512dq)
		return "SkylakeX";
	if (c->os_avx && c->avx2 && c->fma)
		return c->intel ? "Haswell" : "Zen";
	return NULL;
}

void rt_cpu_info(RtCpuInfo *c)
{
	memset(c, 0, sizeof *c);
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, cx, d;
	if (!__get_cpuid(0, &a, &b, &cx, &d))
		return;
	unsigned maxleaf = a;
	c->intel = b == 0x756e6547 && d == 0x49656e69 && cx == 0x6c65746e;   /* "GenuineIntel" */
	__get_cpuid(1, &a, &b, &cx, &d);
	unsigned fam = (a >> 8) & 0xf, mod = (a >> 4) & 0xf;
	c->family = fam == 0xf ? fam + ((a >> 20) & 0xff) : fam;
	c->model = (fam == 6 || fam == 0xf) ? mod | (((a >> 16) & 0xf) << 4) : mod;
	c->fma = (cx >> 12) & 1;
	int osxsave = (cx >> 27) & 1;
	if (osxsave) {
		unsigned lo, hi;
		__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
		c->os_avx = (lo & 0x6) == 0x6;
		c->os_avx512 = (lo & 0xe6) == 0xe6;
	}
	if (maxleaf >= 7) {
		__get_cpuid_count(7, 0, &a, &b, &cx, &d);
		c->avx2 = (b >> 5) & 1;
		c->avx512f = (b >> 16) & 1;
		c->avx512dq = (b >> 17) & 1;
		c->avx512bw = (b >> 30) & 1;
		c->avx512vl = (b >> 31) & 1;
	}
#endif
}

const char *rt_blas_fix_coretype(void)
{
	if (getenv("OPENBLAS_CORETYPE"))
		return NULL;
	RtCpuInfo c;
	rt_cpu_info(&c);
	return rt_blas_coretype_for(openblas_get_corename(), &c);
}
