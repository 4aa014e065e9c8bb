# testsuite/passes/Inputs/reassoc.awk: reads `aicc run --check` output and exits 0 when every
# output's max_rel_err (max |got - want| over max |want|) is within 1e-5, the f32 reassociation
# tolerance of the partition tests: a tensor-parallel split sums the K products in another order
# (for K <= 64 terms the bound K * 2^-24 * sum|terms| / max|y| stays well under 1e-5 here), while
# the default --check tolerance (4 ulp) is for programs that compute in the same order.
/^check/ {
	n++
	s = $0
	sub(/.*max_rel_err /, "", s)
	sub(/,.*/, "", s)
	if (s == "inf" || s == "nan" || s + 0 > 1e-5) { bad = 1; print "out of tolerance: " $0 }
}
END { if (!n) print "no check lines"; exit (bad || !n) }
