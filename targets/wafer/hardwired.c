/* targets/wafer/hardwired.c: the hardwired target's tape-out check.  A chip such as the Taalas
 * HC1 holds one model's weights in mask ROM (<hardwired model precision dims> in its machine
 * file): the weights cost no memory traffic, and neither their shapes nor their precision can
 * change after tape-out.  A compile for such a machine must be that model: every `dim` the
 * machine lists must exist in the module with the same value (after --bind), and an explicit
 * --precision must be the word the weights were fixed in.  Otherwise it is an error naming each
 * mismatch. */
#include "targets/wafer/wafer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hw_check_tapeout(const TgtLower *l, const Device *d, RtError *e)
{
	const Machine *m = l->in->machine->m;
	if (!d->hw_model || !d->hw_dims)
		return rt_errorf(e, RT_EUSER, "aicc: error: machine '%s' has no <hardwired> model: the hardwired target compiles only "
				 "for a chip taped out for one model (taalas-hc1)", m->name);
	char why[768] = "", buf[256];
	size_t o = 0;
	int bad = 0;
	snprintf(buf, sizeof buf, "%s", d->hw_dims);
	const Module *mod = l->in->m;
	for (char *save = NULL, *tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq)
			continue;
		*eq = 0;
		long long want = strtoll(eq + 1, NULL, 10);
		int64_t have;
		if (!ir_dim_const(mod, tok, &have))
			o += (size_t)snprintf(why + o, o < sizeof why ? sizeof why - o : 0, "%sthe model has no dim %s (taped out: %lld)",
					      bad++ ? "; " : "", tok, want);
		else if (have != want)
			o += (size_t)snprintf(why + o, o < sizeof why ? sizeof why - o : 0, "%sdim %s is %lld (taped out: %lld)",
					      bad++ ? "; " : "", tok, (long long)have, want);
	}
	const Precision *p = l->in->prec;
	if (p->given && d->hw_precision && strcmp(p->word->name, d->hw_precision) != 0)
		o += (size_t)snprintf(why + o, o < sizeof why ? sizeof why - o : 0, "%s--precision %s (the weights were fixed at %s)",
				      bad++ ? "; " : "", p->word->name, d->hw_precision);
	if (bad)
		return rt_errorf(e, RT_EUSER, "aicc: error: machine '%s' is hardwired for %s, and this model is not it: %s; weights, "
				 "their shapes and their precision cannot change after tape-out", m->name, d->hw_model, why);
	return 0;
}
