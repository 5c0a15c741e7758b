# Helpers shared by the bench/*.sh comparison scripts (sourced, not run).

# usage FIRST LAST SCRIPT: prints the script's own header comment (its lines FIRST..LAST) and exits 2.
usage() { sed -n "$1,$2p" "$3"; exit 2; }

# Median and min-max of the numbers on stdin, as "MEDIAN MIN MAX" ("- - -" for none).
stats() {
  sort -g | awk '{v[NR]=$1} END{ if(NR==0){print "- - -"; exit}
    m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.2f %.2f %.2f\n", m, v[1], v[NR]}'
}

# ratio A B: A/B to two decimals, "-" where B is missing or zero.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b+0 > 0 && a != "-") printf "%.2f", a/b; else printf "-" }'; }

# have_tool NAME PATH SCRIPT: 1 if PATH is executable, else 0 with a note that only tandem is measured.
have_tool() {
  if [ -x "$2" ]; then echo 1; else echo "$3: no $1 at $2: tandem only" >&2; echo 0; fi
}
