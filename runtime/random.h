/* runtime/random.h: deterministic seeded initialisers, identical on every machine.
 *
 * The generator is counter-based: element i of a fill depends only on (seed, instance, i), so
 * fills can be split, parallelised or resumed without changing a value.
 *   mix(z)  = the splitmix64 finaliser (Steele, Lea, Flood 2014): z ^= z >> 30;
 *             z *= 0xBF58476D1CE4E5B9; z ^= z >> 27; z *= 0x94D049BB133111EB; z ^= z >> 31
 *   key     = mix(seed ^ mix(instance + 0x632BE59BD9B4E019))
 *   r(j)    = mix(key + j * 0x9E3779B97F4A7C15)            (all arithmetic mod 2^64)
 *   U(j)    = (r(j) >> 11) * 2^-53, in [0, 1)
 * Uniform: x[i] = (float)(lo + (hi - lo) * U(i)), computed in double.
 * Normal: Box-Muller on the pair p = i / 2: u1 = 1 - U(2p) in (0, 1], u2 = U(2p + 1),
 *   R = sqrt(-2 ln u1), even i take R cos(2 pi u2), odd i R sin(2 pi u2);
 *   x[i] = (float)(mean + std * z).  ln, cos and sin are evaluated by fixed polynomials in
 *   IEEE double arithmetic (no libm), so the values do not depend on the C library.
 * `instance` separates tensors that share a seed (e.g. the parameter's index).
 */
#ifndef AICC_RANDOM_H
#define AICC_RANDOM_H

#include <stdint.h>

uint64_t rt_rand_u64(uint64_t seed, uint64_t instance, uint64_t j);   /* r(j) above */
void rt_fill_uniform(float *x, int64_t n, float lo, float hi, uint64_t seed, uint64_t instance);
void rt_fill_normal(float *x, int64_t n, float mean, float std, uint64_t seed, uint64_t instance);
/* Elements [first, first + n) of the fills above, into x[0..n): a shard of a seeded tensor
 * generated without the rest (the same bits as the whole fill's). */
void rt_fill_uniform_at(float *x, int64_t first, int64_t n, float lo, float hi, uint64_t seed, uint64_t instance);
void rt_fill_normal_at(float *x, int64_t first, int64_t n, float mean, float std, uint64_t seed, uint64_t instance);

#endif
