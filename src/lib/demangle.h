/* Symbol demangling for the names sftrace shows: Rust v0 (_R...), Rust
 * legacy (_ZN...17h<hash>E) and C++ (Itanium), through libiberty. */
#ifndef SFTRACE_LIB_DEMANGLE_H
#define SFTRACE_LIB_DEMANGLE_H

#include <stddef.h>

/* Returns the demangled name (malloc'd, caller frees), or NULL when
 * `mangled` is NULL or not a mangled name. Rust names come out as a Rust
 * user writes them, without the legacy `::h<hash>` suffix or LLVM's
 * `.llvm.<n>` suffix, e.g. `serde_json::de::from_str` or
 * `<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop`. */
char *sf_demangle(const char *mangled);

/* The short style of a demangled name, for people reading a table or a
 * flame graph (malloc'd, caller frees; never NULL):
 *   - generic and template arguments become `<…>`
 *     (`serde_json::de::from_trait::<…>`, `std::vector<…>::push_back(…)`);
 *   - qualified paths stay readable: `<Vec<…> as core::ops::drop::Drop>::drop`,
 *     and `<Foo<…>>::bar` (an inherent impl) becomes `Foo<…>::bar`;
 *   - closures and lambdas lose their numbers: `{closure}`, `{lambda}`;
 *   - crate hashes (`[a1b2c3]`, `::h0123456789abcdef`) and C++ clone
 *     suffixes (` [clone .cold]`) are dropped;
 *   - C++ parameter lists become `()` or `(…)`, and template functions lose
 *     their return type.
 * `mangled` (may be NULL) tells the language: `_R` and legacy Rust names
 * have no parameter lists, `_Z` names are C++. Names that are neither are
 * only shortened as Rust/C++-like paths. */
char *sf_short_name(const char *name, const char *mangled);

/* The length of `name` without a C++ function's parameter list and the
 * qualifiers after it (`_Z` mangled names: "ns::f(int)", "ns::f(…)" or
 * "ns::K::f(…) const" -> "ns::f"), for views that write the call's own
 * parentheses (replay, graph), as uftrace shows C++ calls:
 * "ns::K::f(0x7ffc…, 1, 2)"; strlen(name) for every other name. */
size_t sf_name_sans_params(const char *name, const char *mangled);

/* `name` fitted to `cols` display columns for a table row (into buf, cap
 * bytes): whole when it fits; else its last component (the function or
 * method: after the last `::` outside <>, (), [] and {}) stays whole after
 * as much of the leading path as fits and "…" ("ns::Some…::method(…)"), so
 * that a long C++ or Rust name still says what ran; a last component wider
 * than cols itself is cut at its end ("…allocate_the_th…"). */
void sf_fit_name(const char *name, size_t cols, char *buf, size_t cap);

#endif
