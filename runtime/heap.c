/* runtime/heap.c: the binary min-heap of runtime/heap.h. */
#include "runtime/heap.h"

static int less(const RtHeapItem *x, const RtHeapItem *y)
{
	return x->key < y->key || (x->key == y->key && x->id < y->id);
}

int rt_heap_push(RtHeap *h, int64_t key, int id)
{
	if (h->n == h->cap) {
		int cap = h->cap ? 2 * h->cap : 16;
		RtHeapItem *a = rt_realloc(h->a, (size_t)cap * sizeof *a);
		if (!a)
			return -1;
		h->a = a;
		h->cap = cap;
	}
	int i = h->n++;
	RtHeapItem it = { key, id };
	while (i > 0 && less(&it, &h->a[(i - 1) / 2])) {
		h->a[i] = h->a[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->a[i] = it;
	return 0;
}

RtHeapItem rt_heap_pop(RtHeap *h)
{
	RtHeapItem top = h->a[0], last = h->a[--h->n];
	int i = 0;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && less(&h->a[c + 1], &h->a[c]))
			c++;
		if (!less(&h->a[c], &last))
			break;
		h->a[i] = h->a[c];
		i = c;
	}
	if (h->n > 0)
		h->a[i] = last;
	return top;
}

void rt_heap_free(RtHeap *h)
{
	rt_free(h->a);
	h->a = NULL;
	h->n = h->cap = 0;
}
