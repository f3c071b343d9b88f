/* Names of the allocator's plumbing, shared by `sftrace memory` (which folds
 * these frames away to find the allocating function, cli/memory_sites.h)
 * and the thread labels (which skip them to find the thread's own first
 * function, lib/thread_label.h). */
#ifndef SFTRACE_LIB_PLUMBING_H
#define SFTRACE_LIB_PLUMBING_H

/* The allocator's plumbing folded by default (PCRE2, on demangled full
 * names): Rust's alloc:: crate (RawVec growth, Vec and String internals),
 * __rust_alloc and friends (also as __rustc::__rust_alloc), __rdl_/__rg_
 * shims, std::alloc:: and core::alloc::, hashbrown (std's HashMap and
 * HashSet: table growth and the map methods that grow it) and
 * std::collections::hash::; core::iter:: (iterator adapters and collect,
 * whose calls run the user's closures: Map::next tail-calling the
 * closure's to_uppercase, collect inlined into the user's fn); C++'s operator new/new[], std::allocator
 * machinery, libstdc++'s container internals whole (_Rb_tree, _Hashtable,
 * std::__detail::, _Vector_base, _Deque_base, _List_base, _Fwd_list_base;
 * at -O0 every member is a traced frame, as _Rb_tree's _Auto_node), the
 * growing members of the standard containers and strings (_M_*,
 * operator[], push_back, emplace*, insert, try_emplace, reserve, resize,
 * assign, append, operator+= (inlined at -O2, its append's call carries
 * operator+='s line in basic_string.h), replace, operator= and the
 * constructors),
 * string concatenation (std::operator+ and std::__str_concat returning a
 * basic_string: at -O0 a traced template instance that calls _M_append),
 * and shared_ptr's (__shared_count, __shared_ptr, _Sp_*, __allocated_ptr,
 * make_shared, allocate_shared, shared_ptr's constructors and operator=).
 * The list applies to traced frames and to inlined ones (DWARF's inline
 * chain at the call site: make_shared inlined into the user's function).
 * `(.* )?`: a template function's demangled name starts with its return
 * type. The man page and README
 * list the same. */
#define SF_ALLOC_PLUMBING_RE                                                                           \
	"^<?alloc::|^(__rustc::)?__rust_(alloc|alloc_zeroed|realloc|dealloc)$|^(__rustc::)?__r[dg]l_|"   \
	"^<?(std|core)::alloc::|^<?core::iter::|^<?hashbrown::|^<?std::collections::hash::|^operator new|"              \
	"^std::allocator|^std::__new_allocator|^__gnu_cxx::new_allocator|^std::allocator_traits|"        \
	"^(.* )?std::(__cxx11::)?(_Rb_tree|_Hashtable|_Vector_base|_Deque_base|_List_base|"             \
	"_Fwd_list_base|__shared_count|__shared_ptr|_Sp_\\w+|__allocated_ptr)<|"                       \
	"^(.* )?std::__detail::|^std::(__cxx11::)?basic_string<.*> std::(operator\\+|__str_concat)<|" \
	"^(.* )?std::(__make_shared|make_shared|allocate_shared|__allocate_shared)<|" \
	"^(.* )?std::(__cxx11::)?(vector|deque|list|forward_list|(unordered_)?(multi)?(map|set)|"        \
	"basic_string|shared_ptr)<.*>::(_M_\\w+|operator\\[\\]|push_back|push_front|emplace(_back|_front|_hint)?|" \
	"insert|try_emplace|reserve|resize|assign|append|operator\\+?=|replace|"                       \
	"vector|deque|list|forward_list|(unordered_)?(multi)?(map|set)|basic_string|shared_ptr)[<(]"

#endif
