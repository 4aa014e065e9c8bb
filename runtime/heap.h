/* runtime/heap.h: a binary min-heap of (key, id) pairs, ordered by key then id, for the
 * schedulers that pick the next stream head (plan_linearize, the timing simulation) in
 * O(log streams) instead of scanning every stream at every step.  Keys are int64; a
 * non-negative double maps to an order-preserving key with rt_heap_dkey.  Allocation through
 * rt_malloc; push returns -1 when memory runs out. */
#ifndef AICC_HEAP_H
#define AICC_HEAP_H

#include <stdint.h>
#include <string.h>

#include "runtime/rt.h"

typedef struct RtHeapItem {
	int64_t key;
	int id;
} RtHeapItem;

typedef struct RtHeap {
	RtHeapItem *a;
	int n, cap;
} RtHeap;

int rt_heap_push(RtHeap *h, int64_t key, int id);
RtHeapItem rt_heap_pop(RtHeap *h);            /* the least (key, id); h->n must be > 0 */
void rt_heap_free(RtHeap *h);

/* IEEE doubles >= 0 (and +inf) order like their bit patterns read as int64. */
static inline int64_t rt_heap_dkey(double v)
{
	int64_t k;
	v = v > 0 ? v : 0;     /* -0.0 and negatives (never given) as 0 */
	memcpy(&k, &v, sizeof k);
	return k;
}

#endif
