/* ir/arena.c: bump allocator for everything a compilation allocates.
 * Policy (docs/design.md): one arena per Module; nothing is freed before the module. */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

typedef struct Chunk {
	struct Chunk *next;
	size_t used, size;
	_Alignas(16) unsigned char data[];
} Chunk;

struct Arena {
	Chunk *head;
	size_t total;
};

enum { CHUNK_MIN = 1 << 20 };

Arena *arena_new(void)
{
	Arena *a = calloc(1, sizeof *a);
	if (!a) {
		fputs("aicc: out of memory\n", stderr);
		abort();
	}
	return a;
}

void arena_free(Arena *a)
{
	if (!a)
		return;
	for (Chunk *c = a->head, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	free(a);
}

void *arena_alloc(Arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	Chunk *c = a->head;
	if (!c || c->size - c->used < n) {
		size_t size = n > CHUNK_MIN ? n : CHUNK_MIN;
		c = malloc(sizeof *c + size);
		if (!c) {
			fputs("aicc: out of memory\n", stderr);
			abort();
		}
		c->size = size;
		c->used = 0;
		c->next = a->head;
		a->head = c;
	}
	void *p = c->data + c->used;
	c->used += n;
	a->total += n;
	memset(p, 0, n);
	return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
	char *d = arena_alloc(a, n + 1);
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

char *arena_strdup(Arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

size_t arena_bytes(const Arena *a) { return a->total; }
