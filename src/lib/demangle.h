/* Symbol demangling for the names sftrace shows: Rust v0 (_R...), Rust
 * legacy (_ZN...17h<hash>E) and C++ (Itanium), through libiberty. */
#ifndef SFTRACE_LIB_DEMANGLE_H
#define SFTRACE_LIB_DEMANGLE_H

/* Returns the demangled name (malloc'd, caller frees), or NULL when
 * `mangled` is NULL or not a mangled name. Rust names come out as a Rust
 * user writes them, without the legacy `::h<hash>` suffix or LLVM's
 * `.llvm.<n>` suffix, e.g. `serde_json::de::from_str` or
 * `<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop`. */
char *sf_demangle(const char *mangled);

#endif
