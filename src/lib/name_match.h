/* Function-name matching for filters: PCRE2 regexes over the names people
 * read (demangled), or over raw symbols as the reference tool did. One
 * matcher for `sftrace filter`, `record --filter-regex` and the filters the
 * runtime asks for when an object loads. */
#ifndef SFTRACE_LIB_NAME_MATCH_H
#define SFTRACE_LIB_NAME_MATCH_H

#include <stddef.h>

enum nm_which {
	NM_DEMANGLED = 0, /* the names report and Perfetto show (default) */
	NM_MANGLED = 1,   /* raw symbols: the reference tool's behaviour */
	NM_BOTH = 2,
};

struct nm_pattern;

struct nm_patterns {
	struct nm_pattern *v;
	size_t n;
	void *md; /* pcre2_match_data, sized for the largest pattern */
};

/* "demangled", "mangled" or "both" -> *out; -1 for anything else. */
int nm_parse_which(const char *s, enum nm_which *out);

void nm_add(struct nm_patterns *ps, const char *text, const char *origin);
/* Regexes from FILE, one per line ('#' lines and blank lines skipped). */
int nm_read_list(struct nm_patterns *ps, const char *path);
/* Compiles every pattern; -1 after a message naming the bad one. */
int nm_compile(struct nm_patterns *ps);
/* Whether any pattern finds s (NULL never matches). */
int nm_match(const struct nm_patterns *ps, const char *s);
/* The index of the last pattern that finds s, or -1. */
int nm_match_last(const struct nm_patterns *ps, const char *s);
const char *nm_text(const struct nm_patterns *ps, size_t i);
void nm_free(struct nm_patterns *ps);

/* A name given where a function is taken (-F/-N, --trigger, --milestone)
 * is first a name, taken whole: the one rule for all of them is
 *   1. a trailing "()" is left out (report and replay print `f()`), and
 *      before it trailing qualifiers (" const", " volatile", " &", " &&",
 *      " noexcept": replay prints `S::get()` for `S::get() const`);
 *   2. a function whose name, in full or in short style, is the text
 *      (with or without its parameter list, with or without trailing
 *      qualifiers) is found: nm_whole_pattern;
 *   3. only when no function has that name is the text a regex
 *      (unanchored, as sftrace filter -r).
 * nm_whole_pattern gives rule 2's pattern (malloc'd). */
char *nm_whole_pattern(const char *text);

/* `name` with the text of its generic arguments replaced by "…": every
 * `<...>` that follows a name or `::` (Vec<T>, from_str::<T>), not the
 * `<Type as Trait>` of a method path. malloc'd. */
char *nm_elide_generics(const char *name);

#endif
