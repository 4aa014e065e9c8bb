/* targets/tpu/ici.c: the inter-chip interconnect (ICI) of a TPU slice and what its collectives and
 * point-to-point copies cost.
 *
 * tpu_ici reads the machine's ICI link class (topology, torus shape, wraparound, bandwidth per
 * chip, ports, per-hop latency) and the device's collective latency factor; the rest are pure
 * functions of bytes, ranks, torus extents, link bandwidth and latency, unit-tested against
 * hand-computed values (testsuite/unit/test_tpu_ici.c).  Sources:
 *   - ring per torus axis, bidirectional where the axis wraps around (backends.md §2b, scaling
 *     book sharding.md): an axis of p chips with wraparound moves a reduce-scatter or all-gather
 *     in floor(p/2) hops at twice the one-way link bandwidth; without wraparound (a slice
 *     smaller than the full axis) in p - 1 hops at the one-way bandwidth, because the end link
 *     carries (p-1)/p of the data in one direction (hardware.md §3.5: "roughly doubles");
 *   - alpha-beta (backends.md §7, Thakur et al. 2005): T = alpha x steps + (p-1)/p x n x beta,
 *     all-reduce = reduce-scatter + all-gather (2x), all-to-all a quarter of an all-gather's
 *     bandwidth term on the same ring (scaling book, backends.md §2b);
 *   - several axes at once: each axis carries a share of the data concurrently, so the
 *     bandwidth term divides by the axes' summed ring bandwidth (V / (W x n_axes) of
 *     backends.md §2b), the hops add up (dimension-ordered phases);
 *   - a fully connected group (topology p2p: the 8i's Boardfly board, hardware.md §2.14): one hop,
 *     each chip exchanges its p-1 chunks over min(p-1, ports) links at once;
 *   - all-to-all over several axes: the load of the busiest link (each ordered pair sends V/P^2
 *     bytes along a shortest path): on a regular torus, dimension-ordered routing puts
 *     V x mean-distance_a / (2P) on each link of a wrapped axis a (floor(e/2) ceil(e/2) V/(e P)
 *     on the middle link of an unwrapped one), so a k x k x 2k slice is bound by its long axis;
 *     a twisted torus (Camara et al., "Twisted Torus Topologies for Enhanced Interconnection
 *     Networks", IEEE TPDS 2010; TPU v4's OCS slices, Jouppi et al. ISCA 2023) is edge-balanced,
 *     so every link carries V x D / (2 x 3 x P) with D its mean distance from a breadth-first
 *     search of the wiring.  4x4x8: 1.655x the regular torus' all-to-all bandwidth, 4x8x8: 1.297x
 *     (the paper's measured 1.63x and 1.31x, testsuite/unit/test_tpu_ici.c); the latency steps of
 *     a twisted slice are its diameter;
 *   - the collective latency factor (device efficiency `collective_latency`, 1 when absent)
 *     scales the latency terms of collectives: the 8i's Collectives Acceleration Engine cuts
 *     collective latency 5x (Google's TPU 8 deep dive), so 0.2 there.
 * Chips are numbered along the torus with the first axis fastest: chip k sits at
 * (k mod d0, (k / d0) mod d1, ...), which is how passes/partition.c numbers tensor-parallel
 * groups (consecutive devices): a group of 4 on a 16x16 torus is a 4-chip piece of one axis. */
#include "targets/tpu/tpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int tpu_ici(const Machine *m, const Device *d, TpuIci *ici, RtError *e)
{
	memset(ici, 0, sizeof *ici);
	ici->coll_latency = dev_efficiency(d, "collective_latency", 1);
	for (int i = 0; i < m->nlinks; i++) {
		const Link *l = &m->links[i];
		if (l->from != d || l->to != d || !num_has(&l->bandwidth))
			continue;
		int ports = num_has(&l->ports) && l->ports.v >= 1 ? (int)l->ports.v : 1;
		ici->present = 1;
		ici->ports = ports;
		ici->full_mesh = l->topo != TOPO_TORUS && l->topo != TOPO_RING && l->topo != TOPO_MESH;
		ici->wrap = l->topo == TOPO_RING || (l->topo == TOPO_TORUS && l->wrap);
		ici->ndims = l->ndims > 0 ? l->ndims : 1;
		for (int k = 0; k < 4; k++)
			ici->dims[k] = k < l->ndims ? l->dims[k] : 1;
		if (l->ndims <= 0)
			ici->dims[0] = num_has(&d->count) ? (int)d->count.v : 1;
		/* The machine states bandwidth per chip, summed over all ports (and both directions
		 * when direction="both"): one link one way is that / ports (/ 2). */
		ici->link_bw = l->bandwidth.v / ports / (l->bidi ? 2 : 1);
		ici->hop_latency = num_has(&l->latency) ? l->latency.v : 0;
		if (ici->link_bw <= 0)
			return rt_errorf(e, RT_EUSER, "aicc: error: machine '%s': ICI link '%s' has no positive bandwidth", m->name, l->id);
		ici->twist = l->twist && ici->wrap && ici->ndims == 3;
		return ici->twist ? tpu_ici_twist(ici, e) : 0;
	}
	return 0;
}

/* The axes a twisted torus shifts: s, the first of the shortest length k, and t, the first of
 * length 2k (-1 when there is none). */
static void twist_axes(const TpuIci *ici, int *s, int *t)
{
	*s = 0, *t = -1;
	for (int a = 1; a < ici->ndims && a < 4; a++)
		if (ici->dims[a] < ici->dims[*s])
			*s = a;
	for (int a = 0; a < ici->ndims && a < 4 && *t < 0; a++)
		if (ici->dims[a] == 2 * ici->dims[*s])
			*t = a;
}

int tpu_ici_twist(TpuIci *ici, RtError *e)
{
	int n = 1, nd = ici->ndims < 4 ? ici->ndims : 4, s, t;
	for (int a = 0; a < nd; a++)
		n *= ici->dims[a] > 0 ? ici->dims[a] : 1;
	twist_axes(ici, &s, &t);
	int *dist = malloc((size_t)n * sizeof *dist), *queue = malloc((size_t)n * sizeof *queue);
	if (!dist || !queue) {
		free(dist), free(queue);
		return rt_errorf(e, RT_ENOMEM, "out of memory wiring a twisted torus of %d chips", n);
	}
	for (int i = 0; i < n; i++)
		dist[i] = -1;
	int head = 0, tail = 0;
	dist[0] = 0, queue[tail++] = 0;
	double sum = 0;
	int diam = 0;
	while (head < tail) {
		int u = queue[head++], c[4] = { 0 }, k = u;
		for (int a = 0; a < nd; a++)
			c[a] = k % ici->dims[a], k /= ici->dims[a];
		sum += dist[u];
		diam = dist[u] > diam ? dist[u] : diam;
		for (int a = 0; a < nd; a++)
			for (int dir = -1; dir <= 1; dir += 2) {
				int v[4] = { c[0], c[1], c[2], c[3] }, L = ici->dims[a];
				v[a] += dir;
				if (v[a] < 0 || v[a] >= L) {
					v[a] = (v[a] + L) % L;
					if (a == s && t >= 0)   /* the twist: the short axis' wraparound shifts by k along t */
						v[t] = ((v[t] + dir * L) % ici->dims[t] + ici->dims[t]) % ici->dims[t];
				}
				int w = 0;
				for (int b = nd - 1; b >= 0; b--)
					w = w * ici->dims[b] + v[b];
				if (dist[w] < 0)
					dist[w] = dist[u] + 1, queue[tail++] = w;
			}
	}
	free(dist), free(queue);
	ici->twist_mean = sum / n;
	ici->twist_diam = diam;
	return 0;
}

/* Mean shortest distance on a ring of e chips over all e ordered pairs from one chip. */
static double ring_mean(int e)
{
	double s = 0;
	for (int d = 0; d < e; d++)
		s += d < e - d ? d : e - d;
	return s / e;
}

/* The busiest link's share of an all-to-all of V bytes over a group of extents ext (several
 * axes): bytes per directed link; *twisted set when the twisted wiring's balance applies. */
static double alltoall_link_load(const TpuIci *ici, const int ext[4], double P, int *twisted)
{
	int full = 1, naxes = 0;
	for (int a = 0; a < ici->ndims && a < 4; a++) {
		full &= ext[a] == ici->dims[a];
		naxes += ext[a] > 1;
	}
	*twisted = ici->twist && full && ici->twist_mean > 0;
	if (*twisted)
		return ici->twist_mean / (2.0 * naxes * P);
	double worst = 0;
	for (int a = 0; a < ici->ndims && a < 4; a++) {
		if (ext[a] < 2)
			continue;
		int wrapped = ici->wrap && ext[a] == ici->dims[a] && ext[a] > 2;
		double load = wrapped ? ring_mean(ext[a]) / (2.0 * P) : (double)(ext[a] / 2) * ((ext[a] + 1) / 2) / (ext[a] * P);
		worst = load > worst ? load : worst;
	}
	return worst;
}

/* Coordinate of chip k on axis a (first axis fastest). */
static int coord(const TpuIci *ici, int k, int a)
{
	for (int i = 0; i < a; i++)
		k /= ici->dims[i] > 0 ? ici->dims[i] : 1;
	return k % (ici->dims[a] > 0 ? ici->dims[a] : 1);
}

void tpu_ici_group(const TpuIci *ici, const int *chips, int n, int ext[4])
{
	for (int a = 0; a < 4; a++) {
		ext[a] = a < ici->ndims ? 0 : 1;
		if (a >= ici->ndims)
			continue;
		/* distinct coordinates on axis a among the members */
		for (int i = 0; i < n; i++) {
			int c = coord(ici, chips[i], a), seen = 0;
			for (int j = 0; j < i && !seen; j++)
				seen = coord(ici, chips[j], a) == c;
			ext[a] += !seen;
		}
		if (ext[a] < 1)
			ext[a] = 1;
	}
}

double tpu_ici_collective(const TpuIci *ici, PlanCollKind kind, double V, const int ext[4], TpuIciCost *c)
{
	memset(c, 0, sizeof *c);
	double P = 1, bw = 0, steps = 0;
	int axes = 0;
	for (int a = 0; a < 4; a++) {
		c->ext[a] = ext[a];
		P *= ext[a];
		axes += ext[a] > 1;
	}
	if (P < 2 || V <= 0 || ici->link_bw <= 0)
		return 0;
	if (ici->full_mesh) {
		/* direct exchange: every peer one hop away, min(p-1, ports) links at once */
		double peers = P - 1, links = peers < ici->ports ? peers : ici->ports;
		steps = ceil(peers / links);
		bw = links * ici->link_bw;
		c->hops = (int)steps;
	} else {
		for (int a = 0; a < ici->ndims && a < 4; a++) {
			if (ext[a] < 2)
				continue;
			int wrapped = ici->wrap && ext[a] == ici->dims[a] && ext[a] > 2;
			c->wrapped[a] = wrapped;
			steps += wrapped ? ext[a] / 2 : ext[a] - 1;
			bw += wrapped ? 2 * ici->link_bw : ici->link_bw;
		}
		c->hops = (int)steps;
	}
	/* one reduce-scatter or all-gather of V bytes (the whole array) */
	double lat = ici->coll_latency * ici->hop_latency * steps, band = (P - 1) / P * V / bw;
	switch (kind) {
	case PC_ALLREDUCE: c->lat = 2 * lat, c->bw = 2 * band; break;
	case PC_ALLGATHER: case PC_REDUCESCATTER: c->lat = lat, c->bw = band; break;
	case PC_ALLTOALL:
		if (!ici->full_mesh && axes >= 2) {
			int tw;
			double load = alltoall_link_load(ici, ext, P, &tw);
			if (tw)
				steps = ici->twist_diam, c->hops = ici->twist_diam;
			c->twisted = tw;
			c->lat = ici->coll_latency * ici->hop_latency * steps, c->bw = V * load / ici->link_bw;
		} else
			c->lat = lat, c->bw = band / 4;
		break;
	default: break;
	}
	c->t = c->lat + c->bw;
	return c->t;
}

int tpu_ici_hops(const TpuIci *ici, int a, int b)
{
	if (a == b)
		return 0;
	if (ici->full_mesh)
		return 1;
	int hops = 0;
	for (int k = 0; k < ici->ndims && k < 4; k++) {
		int d = coord(ici, a, k) - coord(ici, b, k);
		d = d < 0 ? -d : d;
		if (ici->wrap && ici->dims[k] - d < d)
			d = ici->dims[k] - d;
		hops += d;
	}
	return hops;
}

double tpu_ici_copy(const TpuIci *ici, double bytes, int a, int b, TpuIciCost *c)
{
	memset(c, 0, sizeof *c);
	c->hops = tpu_ici_hops(ici, a, b);
	if (c->hops == 0 || ici->link_bw <= 0)
		return 0;
	/* cut-through: the first bytes cross every hop, the rest stream behind at one link's rate */
	c->lat = ici->hop_latency * c->hops;
	c->bw = bytes / ici->link_bw;
	c->t = c->lat + c->bw;
	return c->t;
}
