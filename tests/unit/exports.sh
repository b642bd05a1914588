#!/usr/bin/env bash
# The shared library's ABI is what the public headers declare, nothing more:
# the functions and variables declared in include/cbatch/ (cbatch.h, sys/ and
# the generated version.h) must be exactly the dynamic symbols that
# libcbatch.so defines. A declaration the library does not export (a header
# without its visibility bracket, a function never defined) and an export no
# header declares (an internal cb__ symbol, a CLI helper) both fail.
#   exports.sh CC NM LIBRARY PUBLIC_INCLUDE_DIR... -- DEPENDENCY_INCLUDE_DIR...
set -euo pipefail
export LC_ALL=C # sort and comm must agree on the order
cc=$1 nm=$2 lib=$3
shift 3
public=() flags=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	public+=("$1")
	flags+=("-I$1")
	shift
done
[ $# -gt 0 ] && shift
for d in "$@"; do
	[ -n "$d" ] && flags+=("-I$d")
done
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# One translation unit that includes every public header.
for d in "${public[@]}"; do
	(cd "$d" && find . -name '*.h' | sed 's|^\./||' | sort)
done | sed 's/.*/#include "&"/' >"$scratch/all.c"
[ -s "$scratch/all.c" ] || { echo "exports: no public header under ${public[*]}" >&2; exit 1; }

# The compiler's preprocessor does the includes, conditionals and macros; the
# declarations at file scope of the public headers' own lines (line markers
# name the file) are then read token by token.
"$cc" -E -std=c11 "${flags[@]}" "$scratch/all.c" >"$scratch/all.i"
awk -v dirs="$(printf '%s\n' "${public[@]}")" '
function keep(file,   i) {
	for (i = 1; i <= ndirs; i++)
		if (index(file, dir[i] "/") == 1)
			return 1
	return 0
}
# One statement at file scope, its tokens outside braces in t[1..n].
function declared(   i, j, k, m, u, name, depth) {
	if (n == 0 || t[1] == "typedef")
		return
	# attributes say nothing about the name
	m = 0
	for (i = 1; i <= n; i++) {
		if (t[i] == "__attribute__" || t[i] == "__extension__") {
			if (t[i] == "__attribute__") {
				depth = 0
				for (j = i + 1; j <= n; j++) {
					if (t[j] == "(") depth++
					else if (t[j] == ")" && --depth == 0) break
				}
				i = j
			}
			continue
		}
		u[++m] = t[i]
	}
	for (i = 1; i <= m; i++)
		if (u[i] == "static")
			return # inline helpers: not exported
	if ((u[1] == "struct" || u[1] == "union" || u[1] == "enum") && m <= 2)
		return # a tag declared, no object
	for (i = 1; i <= m && u[i] != "("; i++)
		;
	if (i <= m) {
		if (u[i + 1] == "*") { # a pointer variable: T (*name)(...)
			for (k = i + 1; k <= m && u[k] == "*"; k++)
				;
			name = u[k]
		} else {
			name = u[i - 1]
		}
	} else { # a variable: extern T name[N]
		for (i = 1; i <= m && u[i] != "[" && u[i] != "="; i++)
			;
		name = u[i - 1]
	}
	if (name ~ /^[A-Za-z_][A-Za-z_0-9]*$/)
		print name
	else
		printf "exports: cannot read the declaration: %s\n", stmt() > "/dev/stderr"
}
function stmt(   i, s) {
	s = ""
	for (i = 1; i <= n; i++)
		s = s " " t[i]
	return s
}
BEGIN { ndirs = split(dirs, dir, "\n") }
/^# [0-9]+ "/ {
	file = $3
	gsub(/"/, "", file)
	on = keep(file)
	next
}
!on || /^[ \t]*#/ { next } # not ours, or a #pragma kept by the preprocessor
{
	line = $0
	gsub(/"([^"\\]|\\.)*"/, "\"\"", line)
	gsub(/'"'"'([^'"'"'\\]|\\.)*'"'"'/, "0", line)
	gsub(/[][(){};,*=]/, " & ", line)
	nw = split(line, w, /[ \t]+/)
	for (x = 1; x <= nw; x++) {
		tok = w[x]
		if (tok == "")
			continue
		if (tok == "{") {
			braces++
			continue
		}
		if (tok == "}") {
			# a function body (static inline) ends its statement
			if (--braces == 0 && parens == 0 && n > 0 && t[n] == ")") {
				declared()
				n = 0
			}
			continue
		}
		if (braces > 0)
			continue
		if (tok == "(") parens++
		if (tok == ")") parens--
		if (tok == ";" && parens == 0) {
			declared()
			n = 0
			continue
		}
		t[++n] = tok
	}
}
' "$scratch/all.i" | sort -u >"$scratch/declared"

# What the linker provides in every shared object is not ours to declare.
"$nm" -D --defined-only "$lib" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' |
	grep -vxE '_init|_fini|_edata|_end|__bss_start' | sort -u >"$scratch/exported"

ndecl=$(wc -l <"$scratch/declared")
if [ "$ndecl" -lt 50 ]; then
	echo "exports: only $ndecl declarations read from the public headers: the reading is broken" >&2
	exit 1
fi
missing=$(comm -23 "$scratch/declared" "$scratch/exported")
extra=$(comm -13 "$scratch/declared" "$scratch/exported")
if [ -n "$missing" ]; then
	echo "exports: declared in a public header but not exported by $(basename "$lib"):"
	printf '  %s\n' $missing
fi
if [ -n "$extra" ]; then
	echo "exports: exported by $(basename "$lib") but declared in no public header:"
	printf '  %s\n' $extra
fi
[ -z "$missing" ] && [ -z "$extra" ] || exit 1
echo "exports: $(basename "$lib") exports the $ndecl functions and variables the public headers declare, nothing else"
