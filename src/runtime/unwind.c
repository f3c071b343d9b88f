/* Where unwinding lands: frames abandoned by a longjmp, a caught C++
 * exception or a caught Rust panic end there (docs/DESIGN.md, Unwinding).
 *
 * Their exit sleds never run, so we watch the points where control is
 * about to land, none of them on the hot path:
 *   - the longjmp family: the target stack pointer is in the jmp_buf;
 *   - _Unwind_SetIP, which every personality routine (C++, Rust, C
 *     cleanups) calls to install a landing pad, catch or cleanup; the
 *     landing frame's stack pointer comes with it.
 * The landing's time is read first. The trampolines keep a shadow stack
 * of the open frames' stack pointers (struct sf_thread, x86-64 and
 * aarch64: each frame's CFA - 8, trampoline.S): the
 * entries below the landing point are the recorded frames it abandons,
 * popped in O(log frames): found by bisection, as the entries of one
 * stack nest (x86-64 keeps the entries past its 512-entry array
 * in a per-thread area mapped at the first push there: sf_shadow_slot).
 * When it cannot tell (more abandoned frames than it
 * holds, another stack, no shadow stack on this architecture) we walk the
 * current stack with libgcc_s's unwinder and count the recorded frames
 * below the landing point: frames whose function starts with a patched
 * entry sled. One SF_EV_UNWIND_TO event carries the thread's depth left
 * open (SF_EV_UNWIND and the count where there is no shadow stack); the
 * reader closes the frames above it at its time. In within mode the window depth is fixed
 * too, which the skipped exit sleds would otherwise leave too high.
 *
 * We stand in front of no frame lookup (_Unwind_Find_FDE): no pc of ours
 * lies outside this library (x86-64's far sleds call through data slots,
 * arch/x86_64/patch.c; aarch64's reach the trampolines directly). The
 * stand-in is not exported: it reaches only the references bound to
 * libgcc_s's definition, through their GOT slots (got_bind.c), so the
 * program's own lookups (dlsym, dlvsym, a weak reference) see what they
 * see untraced. */
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <unwind.h>

#include "runtime/runtime.h"

typedef _Unwind_Reason_Code (*backtrace_fn)(_Unwind_Trace_Fn, void *);
typedef _Unwind_Word (*getcfa_fn)(struct _Unwind_Context *);
typedef _Unwind_Ptr (*regionstart_fn)(struct _Unwind_Context *);
typedef _Unwind_Ptr (*getipinfo_fn)(struct _Unwind_Context *, int *);
typedef void (*setip_fn)(struct _Unwind_Context *, _Unwind_Ptr);
typedef void (*longjmp_fn)(void *, int) __attribute__((noreturn));

#ifdef SF_ARCH_SHADOW
static void land_untag(struct sf_thread *t);
#endif

/* libgcc_s's unwinder (walks), and the functions we stand in front of. */
static struct {
	backtrace_fn backtrace;
	getcfa_fn getcfa;
	regionstart_fn regionstart;
	getipinfo_fn getipinfo;
	setip_fn gcc_setip;
	setip_fn setip; /* the definition the bound references had: libgcc_s's */
	longjmp_fn longjmp, _longjmp, siglongjmp, longjmp_chk;
} R;

/* The real functions, also when tracing is off or our constructor has not
 * run yet (another constructor may longjmp first). The longjmp family is
 * libc's, always there; like the unwinder's next definitions they are
 * looked up in the objects' tables (elf_sym.c), since a dlsym that misses
 * allocates its error message through the program's malloc (a C program
 * has no libgcc_s) and one that finds frees the program's pending one. Found in any
 * object after ours, also one loaded RTLD_LOCAL (glibc loads libgcc_s so). */
static void resolve_next(void)
{
	R.longjmp = (longjmp_fn)sf_real("longjmp");
	R._longjmp = (longjmp_fn)sf_real("_longjmp");
	R.siglongjmp = (longjmp_fn)sf_real("siglongjmp");
	R.longjmp_chk = (longjmp_fn)sf_real("__longjmp_chk");
	if (!R.setip)
		R.setip = (setip_fn)sf_sym_lib("libgcc_s.so", "_Unwind_SetIP");
}

/* Also when tracing is off: the wrappers then only forward, and must not
 * look anything up from a signal handler. sf_init calls it first, before any event
 * can be recorded; the constructor covers processes where sf_init returns
 * early. */
void sf_unwind_resolve(void)
{
	if (!__atomic_load_n(&R.longjmp, __ATOMIC_ACQUIRE))
		resolve_next();
}

__attribute__((constructor)) static void unwind_resolve(void)
{
	sf_unwind_resolve();
}

/* Where libgcc's struct _Unwind_Context keeps the CFA and the return
 * address (libgcc 4 to 14), for _Unwind_SetIP's fast path, which reads the
 * one and writes the other in place. It is armed (setip_armed) only when
 * R.setip is libgcc's (landing only reads libgcc's contexts) and its
 * _Unwind_GetCFA and _Unwind_SetIP are exactly the load and the store at
 * these offsets. */
#if defined(__x86_64__)
#define CTX_CFA_OFF 0x90
#define CTX_RA_OFF 0x98
#elif defined(__aarch64__)
#define CTX_CFA_OFF 784
#define CTX_RA_OFF 792
#else
#define CTX_CFA_OFF 0
#define CTX_RA_OFF 0
#endif
static int setip_armed;

/* The displacement of fn's one move between a register and the word at
 * its first argument + disp, when its code is exactly that move and a
 * return (with or without the branch-target marker before), else 0.
 * x86-64: op is the mov's opcode (0x8b load, 0x89 store) and reg its
 * register field (rax 0, rsi 6); aarch64: insn the ldr or str with a zero
 * offset. */
#if defined(__x86_64__)
static long move_disp(const void *fn, unsigned char op, unsigned reg)
{
	const unsigned char *c = fn;
	if (c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa) /* endbr64 */
		c += 4;
	if (c[0] != 0x48 || c[1] != op)
		return 0;
	int32_t d32;
	if (c[2] == (0x87 | reg << 3) && c[7] == 0xc3) { /* disp32(%rdi); ret */
		__builtin_memcpy(&d32, c + 3, 4);
		return d32 > 0 ? d32 : 0;
	}
	if (c[2] == (0x47 | reg << 3) && c[4] == 0xc3) /* disp8(%rdi); ret */
		return (signed char)c[3] > 0 ? (signed char)c[3] : 0;
	return 0;
}
#elif defined(__aarch64__)
static long move_disp(const void *fn, uint32_t insn)
{
	const uint32_t *c = fn;
	if (c[0] == 0xd503245f) /* bti c */
		c++;
	if ((c[0] & 0xffc003ff) == insn && c[1] == 0xd65f03c0) /* insn with #imm; ret */
		return (long)((c[0] >> 10) & 0xfff) * 8;
	return 0;
}
#endif

/* The displacement of getcfa's load ("return the word at ctx + disp":
 * libgcc 12, x86-64 0x90, aarch64 784) and of setip's store ("store the
 * second argument at ctx + disp": 0x98, 792), else 0. */
static long cfa_load_disp(const void *getcfa)
{
#if defined(__x86_64__)
	return move_disp(getcfa, 0x8b, 0); /* mov disp(%rdi),%rax */
#elif defined(__aarch64__)
	return move_disp(getcfa, 0xf9400000); /* ldr x0, [x0, #imm] */
#else
	(void)getcfa;
	return 0;
#endif
}

static long ra_store_disp(const void *setip)
{
#if defined(__x86_64__)
	return move_disp(setip, 0x89, 6); /* mov %rsi,disp(%rdi) */
#elif defined(__aarch64__)
	return move_disp(setip, 0xf9000001); /* str x1, [x0, #imm] */
#else
	(void)setip;
	return 0;
#endif
}

static void setip_fast_init(void)
{
	long cfa = R.getcfa ? cfa_load_disp((const void *)R.getcfa) : 0; /* 0: not known */
	if (R.setip == R.gcc_setip && cfa > 0 && cfa == CTX_CFA_OFF && ra_store_disp((const void *)R.gcc_setip) == CTX_RA_OFF)
		__atomic_store_n(&setip_armed, 1, __ATOMIC_RELEASE);
}

/* libgcc_s's unwinder, for the fallback walk, once the program has it:
 * the runtime loads nothing the program did not (a program may check
 * dlopen(..., RTLD_NOLOAD), and the loader's allocations for it are the
 * program's when it loads it). At start (C++ and Rust programs link it,
 * glibc loads it for backtrace() and thread cancellation) and at every
 * loader event (loader_hook.c: mapped, before it is relocated; the
 * pointers are only called later). Until then a landing the shadow stack
 * cannot tell is left to the reader's repair. */
void sf_unwind_init(void)
{
	if (__atomic_load_n(&R.backtrace, __ATOMIC_ACQUIRE))
		return;
	void *bt = sf_sym_lib("libgcc_s.so", "_Unwind_Backtrace");
#ifndef SF_ARCH_SHADOW
	/* Without a shadow stack (an architecture whose trampolines keep
	 * none; x86-64 and aarch64 keep one) the walk is the only
	 * answer: the runtime still loads it at start, not at the first
	 * longjmp, which may come from a signal handler. */
	if (!bt && dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL))
		bt = sf_sym_lib("libgcc_s.so", "_Unwind_Backtrace");
#endif
	if (!bt)
		return;
	R.gcc_setip = (setip_fn)sf_sym_lib("libgcc_s.so", "_Unwind_SetIP");
	if (!R.setip)
		R.setip = R.gcc_setip;
	R.getcfa = (getcfa_fn)sf_sym_lib("libgcc_s.so", "_Unwind_GetCFA");
	R.regionstart = (regionstart_fn)sf_sym_lib("libgcc_s.so", "_Unwind_GetRegionStart");
	R.getipinfo = (getipinfo_fn)sf_sym_lib("libgcc_s.so", "_Unwind_GetIPInfo");
	if (R.getcfa && R.regionstart) {
		setip_fast_init();
		__atomic_store_n(&R.backtrace, (backtrace_fn)bt, __ATOMIC_RELEASE);
	}
}

/* The recorded frames abandoned by a landing: those whose CFA is at or
 * below `sp`, the stack pointer control lands with. With `mark` (x86-64, a
 * target deeper than the shadow array): also the recorded frames still
 * live between the target and the frame whose return address is at mark,
 * the array's last entry. */
struct walk {
	uint64_t sp;
	uint64_t mark;          /* 0: count the abandoned frames only */
	int reached;            /* a live frame was seen */
	int found;              /* the frame at mark was reached: live is exact */
	int signal;             /* a signal frame among the abandoned ones */
	int restart;            /* stopped at it: walk again from the target (walk_from) */
	const uint64_t *from;   /* the target's pc, sp, fp (a longjmp's), or NULL */
	int callee;             /* variant of the frame visited before, -1 for none */
	uint32_t recorded;      /* abandoned frames that recorded their entry */
	uint32_t windows;       /* abandoned window frames (within mode) */
	uint32_t pending_gated; /* abandoned gated frames with no window seen outside them yet */
	uint32_t live;          /* live plain frames inside the frame at mark */
	uint32_t visited;       /* live frames walked */
};

/* At most this many live frames are walked to the mark: a landing out of a
 * handler at depth 100,000 would otherwise walk them all (about 0.1 ms a
 * thousand frames), with signals held back. Past it, the subtraction. */
enum { LIVE_WALK_MAX = 4096 };

/* Counts one abandoned frame of the given variant. A gated frame recorded
 * its entry iff a window frame was open outside it then, and window frames
 * outside it are still there. */
static void count_abandoned(struct walk *w, int variant)
{
	switch (variant) {
	case SF_VARIANT_PLAIN:
		w->recorded++;
		break;
	case SF_VARIANT_WINDOW:
		w->recorded += 1 + w->pending_gated;
		w->pending_gated = 0;
		w->windows++;
		break;
	case SF_VARIANT_GATED:
		w->pending_gated++;
		break;
	default:
		break;
	}
}

/* A live frame, the one visited before ctx's (its CFA is cfa): counted
 * if it recorded its entry, until the frame at w->mark. Live frames stand
 * at calls, so their unwind information is exact, where an abandoned
 * frame a signal interrupted may be in a trampoline, before its shadow
 * push or pop: counting the live ones gives the depth itself, not a
 * difference that such a frame would make wrong from then on. Any doubt
 * (a window or gated frame, a signal frame among the live ones, or a frame
 * with no unwind information before the mark) leaves found at 0, and the
 * landing to the count of abandoned frames, as does a mark more than
 * LIVE_WALK_MAX frames out. Only for landings out of a signal handler
 * (walk_frame). */
static _Unwind_Reason_Code walk_live(struct walk *w, struct _Unwind_Context *ctx, uint64_t cfa)
{
	if (cfa - 8 == w->mark) {
		w->found = 1;
		return _URC_END_OF_STACK;
	}
	int signal_frame = 0;
	if (++w->visited > LIVE_WALK_MAX)
		return _URC_END_OF_STACK;
	if (w->callee == SF_VARIANT_PLAIN)
		w->live++;
	else if (w->callee != -1)
		return _URC_END_OF_STACK;
	R.getipinfo(ctx, &signal_frame);
	if (signal_frame)
		return _URC_END_OF_STACK;
	w->callee = sf_patch_entry_variant(R.regionstart(ctx));
	return _URC_NO_REASON;
}

static _Unwind_Reason_Code walk_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	/* libgcc reports, with each frame, the CFA of the frame visited
	 * before it (the one it called): that frame's fate is known now. */
	uint64_t cfa = R.getcfa(ctx);
	if (w->mark && !w->reached && !w->signal)
		R.getipinfo(ctx, &w->signal);
	if (w->reached || cfa > w->sp) {
		w->reached = 1;
		/* Only a signal can catch an abandoned frame in a trampoline:
		 * otherwise the abandoned frames' count is exact, and cheaper
		 * than walking the live frames down to the mark. */
		return w->mark && w->signal ? walk_live(w, ctx, cfa) : _URC_END_OF_STACK;
	}
	/* Then only the live frames count, and the abandoned ones left to
	 * walk may be many: handlers nested by a signal that came again
	 * while the previous landing walked, each walking all the frames
	 * nested before it, would never land (walk_abandoned). */
	if (w->signal && w->from) {
		w->restart = 1;
		return _URC_END_OF_STACK;
	}
	count_abandoned(w, w->callee);
	w->callee = sf_patch_entry_variant(R.regionstart(ctx));
	return _URC_NO_REASON;
}

/* A walk under way on this thread: the suppression it began and the
 * signals it blocked that were not blocked before; its frame is
 * sf_self.walk_frame (read by every landing's first test). Set only while
 * it runs (walk_abandoned). */
static __thread struct {
	struct sf_suppress_state quiet;
	uint64_t added; /* signal mask bits (signal n: bit n - 1) */
} walking __attribute__((tls_model("initial-exec")));

/* The signals a walk holds back: all but those a fault raises, which the
 * kernel would otherwise turn into a kill (they still reach the program's
 * handler, and end_interrupted_walk covers one that jumps out). */
#define SIG_BIT(n) (1ull << ((n) - 1))
static const uint64_t walk_blocked =
	~(SIG_BIT(SIGSEGV) | SIG_BIT(SIGBUS) | SIG_BIT(SIGILL) | SIG_BIT(SIGFPE) | SIG_BIT(SIGTRAP) | SIG_BIT(SIGSYS));

static void mask_change(int how, uint64_t bits, uint64_t *old)
{
	sigset_t set, was;
	sigemptyset(&set);
	__builtin_memcpy(&set, &bits, sizeof(bits));
	pthread_sigmask(how, &set, old ? &was : NULL);
	if (old)
		__builtin_memcpy(old, &was, sizeof(*old));
}

/* A landing out of a walk that a fault's handler interrupted (the handler
 * siglongjmps, or throws, past the walk's frame): the walk will never end
 * its suppression nor unblock the signals it held, so the landing does,
 * before anything else (else the thread would record nothing again). A
 * landing within the handler's own frames leaves the walk alone. */
static void end_interrupted_walk(uint64_t sp)
{
	if (!sf_self.walk_frame || sp <= sf_self.walk_frame)
		return;
	sf_self.walk_frame = 0;
	sf_suppress_end(&walking.quiet);
	if (walking.added)
		mask_change(SIG_UNBLOCK, walking.added, NULL);
}

#ifdef SF_ARCH_SHADOW
/* bt(fn, arg) from a frame whose caller is at = {pc, sp, fp}
 * (arch/<arch>/walk_from.S). */
int sf_arch_walk_from(const uint64_t at[3], backtrace_fn bt, _Unwind_Trace_Fn fn, void *arg) SF_HIDDEN;

/* A landing from a signal handler deeper than the array: its depth is the
 * array's frames and the live ones inside them, counted from the target
 * outward (the jmp_buf's state), so the cost is the live frames' only,
 * whatever lies below the target. The walk from the landing point stopped
 * at the first signal frame (walk_frame). When this one cannot tell
 * either, the whole walk from here, as before. */
static void walk_from_target(backtrace_fn bt, struct walk *w)
{
	struct walk r = {.sp = w->sp, .mark = w->mark, .signal = 1, .callee = -1};
	sf_arch_walk_from(w->from, bt, walk_frame, &r);
	if (r.found) {
		*w = r;
		return;
	}
	*w = (struct walk){.sp = w->sp, .mark = w->mark, .callee = -1};
	bt(walk_frame, w);
}
#endif

/* Walks the current stack; from the target when the walk says so. */
static void walk_stack(backtrace_fn bt, struct walk *w)
{
	bt(walk_frame, w);
#ifdef SF_ARCH_SHADOW
	if (w->restart)
		walk_from_target(bt, w);
#endif
}

/* The walk (libgcc's unwinder): for architectures without a shadow stack,
 * and when the shadow stack cannot tell (see landing). Suppressed: libgcc
 * may allocate on its way (tables a JIT registered, say), which is then
 * neither recorded as the program's calls nor counted by --alloc. With
 * signals held back: a handler that ran during the walk would record
 * nothing (suppressed), and one that jumps out of it would leave the
 * thread suppressed for good; it runs when the walk is over instead, a few
 * microseconds later. 0 if the target is not on this stack. */
static int walk_abandoned(uint64_t sp, uint64_t mark, const uint64_t *from, struct walk *w)
{
	backtrace_fn bt = __atomic_load_n(&R.backtrace, __ATOMIC_ACQUIRE);
	if (!bt)
		return 0;
	mark = R.getipinfo ? mark : 0;
	*w = (struct walk){.sp = sp, .mark = mark, .from = mark ? from : NULL, .callee = -1};
	if (__atomic_load_n(&sf_self.walk_frame, __ATOMIC_RELAXED)) {
		/* Within a fault handler that interrupted a walk, which is
		 * suppressed and holds the signals back already. */
		walk_stack(bt, w);
		return w->reached;
	}
	uint64_t old;
#ifdef SF_ARCH_SHADOW
	land_untag(&sf_self); /* until a landing after the walk: land_tag */
#endif
	mask_change(SIG_BLOCK, walk_blocked, &old);
	walking.added = walk_blocked & ~old;
	sf_suppress_begin(&walking.quiet);
	__atomic_store_n(&sf_self.walk_frame, (uint64_t)__builtin_frame_address(0), __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	walk_stack(bt, w);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&sf_self.walk_frame, 0, __ATOMIC_RELAXED);
	sf_suppress_end(&walking.quiet);
	if (walking.added)
		mask_change(SIG_UNBLOCK, walking.added, NULL);
	/* Not reached: the target is not on this stack (a longjmp to
	 * another stack, as user-level thread switches do). Leave it. */
	return w->reached;
}

/* Closes the frames of the walk: the window depth, the shadow stack. */
SF_LANDING_TEXT static uint32_t close_walked(struct sf_thread *t, struct walk *w)
{
	/* A signal handler landing in between leaves the depth as it
	 * found it (or lands itself, and sets it right). */
	uint64_t live_windows = t->window_depth > w->windows ? t->window_depth - w->windows : 0;
	if (live_windows)
		w->recorded += w->pending_gated;
	t->window_depth = live_windows;
#ifdef SF_ARCH_SHADOW
	if (w->found) { /* the array's frames and the live ones inside them */
		uint64_t was = sf_shadow_depth(t);
		sf_shadow_set_depth(t, sf_shadow_stored(t) + w->live);
		t->shadow_top &= ~SF_SHADOW_TAG; /* its frame may be an abandoned one */
		return w->recorded || was != sf_shadow_depth(t) ? w->recorded | 1 : 0; /* only tested for 0 */
	}
	sf_shadow_set_depth(t, sf_shadow_depth(t) > w->recorded ? sf_shadow_depth(t) - w->recorded : 0);
#endif
	return w->recorded;
}

#ifdef SF_ARCH_SHADOW
/* ---- the thread's stack: is a landing on it? ----
 * When a landing pops every entry of the shadow stack, either every
 * recorded frame is abandoned (the setjmp caller, or the catcher, is not
 * recorded: a filter, an uninstrumented caller) or control goes to another
 * stack (a user-level thread switch), where nothing is abandoned. The
 * stacks' bounds tell them apart (stack.c). */

/* 1 if every one of the n stored entries lies on the thread's own stack or
 * on the signal stack it runs on (a handler's recorded frames). */
SF_LANDING_TEXT static int entries_on_own_stack(const struct sf_thread *t, uint64_t n)
{
	uint64_t lo = 0, hi = 0;
	int asked = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t e = SF_SHADOW_ADDR(*sf_shadow_slot((struct sf_thread *)t, i));
		if (sf_stack_own_holds(e))
			continue;
		if (!asked) {
			asked = 1;
			if (!sf_stack_alt((uint64_t)__builtin_frame_address(0), &lo, &hi))
				lo = hi = 0;
		}
		if (e < lo || e >= hi)
			return 0;
	}
	return 1;
}

/* 1 if sp, where a landing goes, is on the stack of the n stored entries it
 * pops, all of them: the stack the thread runs on now, above the current
 * frame; or, from another stack (a handler on a signal stack jumping
 * back), the thread's own, where the entries are. */
SF_LANDING_TEXT static int on_this_stack(const struct sf_thread *t, uint64_t n, uint64_t sp)
{
	uint64_t cur = (uint64_t)__builtin_frame_address(0);
	if (!sf_stack_own_holds(cur) && sf_stack_own_holds(sp) && entries_on_own_stack(t, n))
		return 1;
	return sf_on_this_stack(sp);
}

/* Entry i's address, and whether it lies on the landing's stack [lo, hi)
 * (every entry does when the bounds are unknown: hi 0). */
static inline uint64_t entry_at(struct sf_thread *t, uint64_t i, uint64_t lo, uint64_t hi, int *on)
{
	uint64_t e = SF_SHADOW_ADDR(*sf_shadow_slot(t, i));
	*on = !hi || (e >= lo && e < hi);
	return e;
}

/* The stored entries a landing at sp leaves open (the rule: docs/DESIGN.md,
 * Unwinding, "One stack at a time"), by a scan from the innermost one. Only
 * entries on the landing's stack, [lo, hi), compare with sp: an entry there
 * at or above sp is live and ends the scan; one below is abandoned. An
 * entry on another stack (a coroutine switched away from, a signal stack)
 * says nothing about this landing: it is skipped, and popped only with an
 * abandoned entry of the landing's stack outside it (the thread's depth is
 * one number: the reader closes it as nested there). With the bounds
 * unknown (hi 0) every entry compares, as on one stack. O(frames popped):
 * only when the search below meets an entry of another stack. */
SF_LANDING_TEXT static uint64_t known_left_scan(struct sf_thread *t, uint64_t known, uint64_t sp, uint64_t lo, uint64_t hi)
{
	uint64_t left = known;
	for (uint64_t i = known; i > 0; i--) {
		int on;
		uint64_t e = entry_at(t, i - 1, lo, hi, &on);
		if (!on)
			continue;
		if (e >= sp)
			break;
		left = i - 1;
	}
	return left;
}

/* The same answer in O(log frames): the entries of one stack nest, so
 * their addresses fall as the depth grows, and the first abandoned one is
 * found by bisection: live (at or above sp) below `lo_i`, abandoned from
 * `hi_i` on. Ends with two adjacent probes, both on the landing's stack,
 * one live and one abandoned (or an end of the stored entries): an entry
 * of another stack between them cannot exist, and every entry of this
 * stack outside them compares as they do, so the answer is the scan's.
 * A probe that meets an entry of another stack falls back to the scan. */
SF_LANDING_TEXT static uint64_t known_left(struct sf_thread *t, uint64_t known, uint64_t sp, uint64_t lo, uint64_t hi)
{
	uint64_t lo_i = 0, hi_i = known; /* [0, lo_i) live, [hi_i, known) abandoned */
	while (lo_i < hi_i) {
		uint64_t mid = lo_i + (hi_i - lo_i) / 2;
		int on;
		uint64_t e = entry_at(t, mid, lo, hi, &on);
		if (!on)
			return known_left_scan(t, known, sp, lo, hi);
		if (e >= sp)
			lo_i = mid + 1;
		else
			hi_i = mid;
	}
	return hi_i;
}


/* A longjmp from another stack than its target's (cur, the landing's own
 * frame, is not on the target's mapping [lo, hi) below sp): a coroutine's,
 * a signal stack's, maybe an array inside a frame of the target's stack
 * above sp, which address order alone cannot tell from that frame. The
 * rule is push order: every entry pushed after the target frame's is
 * abandoned. Scanning from the outermost entry, skipping those on the
 * signal stack the landing runs on: the first one on the target's mapping
 * that is below sp, or above the one before it there (so not nested in it:
 * another stack that shares the mapping, as adjacent mmaps do), is
 * abandoned with all after it; else the target frame's entry is the
 * innermost one on the target's mapping, and all after it are abandoned. known when no entry is on the target's stack (the scan
 * then skips them all, as known_left_scan does). With the target's
 * mapping unknown (maps read STACK_READS times already: a program that
 * maps a stack per coroutine), every address but the thread's own stack
 * (skip_own: the target is not on it) stands for it. O(frames): only such
 * landings. */
SF_LANDING_TEXT static uint64_t away_left(struct sf_thread *t, uint64_t known, uint64_t sp, uint64_t lo, uint64_t hi, int skip_own)
{
	uint64_t alt_lo = 0, alt_hi = 0; /* the signal stack the landing runs on: empty for none */
	if (!sf_stack_alt((uint64_t)__builtin_frame_address(0), &alt_lo, &alt_hi))
		alt_lo = alt_hi = 0;
	uint64_t left = known, inner = UINT64_MAX; /* the innermost live entry so far */
	for (uint64_t i = 0; i < known; i++) {
		uint64_t e = SF_SHADOW_ADDR(*sf_shadow_slot(t, i));
		if (e < lo || e >= hi || (e >= alt_lo && e < alt_hi) || (skip_own && sf_stack_own_holds(e)))
			continue;
		if (e < sp || e > inner)
			return i;
		inner = e;
		left = i + 1;
	}
	return left;
}

/* 1 if the landing runs on another stack than its target's: its own frame
 * is not on the target's mapping below the target (a longjmp on one stack
 * goes outward, to a higher address). */
static int landing_away(uint64_t sp, uint64_t lo, uint64_t hi)
{
	uint64_t cur = (uint64_t)__builtin_frame_address(0);
	return hi && !(cur >= lo && cur < sp && sp < hi);
}

/* The shadow stack's answer: pops the entries of frames whose return
 * address lies below sp, the stack pointer control lands with (the frame
 * that called setjmp, or holds the landing pad, has its own above it).
 * Frames past the stored entries have none (trampoline.S); they are
 * deeper than the last stored one, so abandoned with it. O(log frames)
 * (known_left; within mode adds a count of the popped window frames).
 * Returns -1 when it cannot tell: the target is deeper than the
 * array (or window frames may be among the unstored ones), or every entry
 * is below sp and the target is not on this stack. */
SF_LANDING_TEXT static int64_t shadow_pop(struct sf_thread *t, uint64_t sp, const void *env)
{
	uint64_t depth = sf_shadow_depth(t), stored = sf_shadow_stored(t), known = depth < stored ? depth : stored;
	uint64_t lo = 0, hi = 0, windows = 0;
	int bounded = sf_stack_of(sp, &lo, &hi);
	uint64_t left;
	if (env && bounded && landing_away(sp, lo, hi))
		left = away_left(t, known, sp, lo, hi, 0);
	else if (env && !bounded && t->stack.own > 0 && !sf_stack_own_holds(sp) && landing_away(sp, 0, UINT64_MAX))
		left = away_left(t, known, sp, 0, UINT64_MAX, 1);
	else
		left = known_left(t, known, sp, lo, hi);
	for (uint64_t i = left; t->window_depth && i < known; i++) /* within mode only: O(frames popped) */
		windows += *sf_shadow_slot(t, i) & 1;
	if (depth > known && (left == known || t->window_depth))
		return -1;
	if (!bounded && !left && known && !on_this_stack(t, known, sp))
		return -1;
	sf_shadow_set_depth(t, left);
	t->window_depth = t->window_depth > windows ? t->window_depth - windows : 0;
	return (int64_t)(depth - left);
}
#endif

#ifdef SF_ARCH_SHADOW
/* 1 if the landing at sp leaves the entry e live, told from the thread's
 * own stack alone: both on it, sp at or below e (one downward stack).
 * Otherwise (another stack, or the bounds not known yet: 0) the full
 * path's rule decides (known_left). A longjmp's test; _Unwind_SetIP's
 * fast path does not make it (see there). */
static inline int on_own_stack(const struct sf_thread *t, uint64_t sp, uint64_t e)
{
	return sp <= e && e < t->stack.hi && sp >= t->stack.lo;
}

/* 1 if the landing runs below its target, as a longjmp on one stack does:
 * one that runs above it on the same mapping runs on an array in a frame
 * outside the target (a coroutine's stack, a sigaltstack), whose entries
 * at or above sp are abandoned all the same (away_left). */
static inline __attribute__((always_inline)) int below_target(uint64_t sp)
{
	return (uint64_t)__builtin_frame_address(0) < sp;
}

/* A longjmp that abandons no recorded frame, told before the clock is
 * read: the innermost stored entry is live (at or above sp), so nothing is
 * popped, and the slot above it holds no half-exited frame's entry below
 * sp, so nothing is recorded either (landing below says why). Any doubt
 * (no stored entry, past the array, a resume's resync due, a walk a fault
 * interrupted) takes the full path. Exceptions have their own test, in
 * _Unwind_SetIP. */
static inline int abandons_nothing(const struct sf_thread *t, uint64_t sp)
{
	uint64_t d = sf_shadow_depth(t);
	if (d - 1 >= SF_SHADOW_CAP - 1 || t->walk_frame ||
	    t->shadow_epoch != __atomic_load_n(&sf_resume_epoch, __ATOMIC_RELAXED))
		return 0;
	uint64_t above = SF_SHADOW_ADDR(t->shadow[d]), e = SF_SHADOW_ADDR(t->shadow[d - 1]);
	return on_own_stack(t, sp, e) && below_target(sp) && (!above || above >= sp);
}

/* 1 if the stored entries [0, n) all lie on the stack of entry n - 1.
 * Scanned from n - 1 down to the first one a landing tagged before (those
 * below it lie on its stack: land_tag), tagging each on the way. 0 if one
 * does not, or that stack is unknown. */
SF_LANDING_TEXT static int one_stack_below(struct sf_thread *t, uint64_t n)
{
	uint64_t lo, hi, i = n;
	if (!n)
		return 1;
	uint64_t top = SF_SHADOW_ADDR(*sf_shadow_slot(t, n - 1));
	if (!top || !sf_stack_of(top, &lo, &hi)) /* 0: a resync's stand-in (sf_shadow_resync) */
		return 0;
	for (; i > 0; i--) {
		uint64_t e = *sf_shadow_slot(t, i - 1), a = SF_SHADOW_ADDR(e);
		if (a < lo || a >= hi)
			return 0;
		if (e & SF_SHADOW_TAG)
			break;
	}
	for (; i < n; i++)
		*sf_shadow_slot(t, i) |= SF_SHADOW_TAG;
	return 1;
}

/* Arms _Unwind_SetIP's fast path on this thread (see there) for the
 * innermost entry: tags it when every entry lies on its stack (the
 * thread's own, or a coroutine's it runs on), and copies it, tagged, to
 * shadow_top past the array. Only once libgcc's layout is known, and not
 * during a walk, which a fault handler's throw out of it must end on the
 * full path (end_interrupted_walk). */
SF_LANDING_TEXT static void land_tag(struct sf_thread *t)
{
	if (!__atomic_load_n(&setip_armed, __ATOMIC_ACQUIRE) || t->walk_frame)
		return;
	if (!t->shadow_blk) /* a thread that never pushed (nothing of it recorded) throws */
		sf_shadow_blk_alloc();
	if (!sf_shadow_mapped(t))
		return;
	t->shadow[-1] = UINT64_MAX;
	uint64_t d = sf_shadow_depth(t), stored = sf_shadow_stored(t);
	if (d > stored || !one_stack_below(t, d)) {
		t->shadow_top &= ~SF_SHADOW_TAG;
		return;
	}
	if (d > SF_SHADOW_CAP)
		t->shadow_top = *sf_shadow_slot(t, d - 1);
}

/* The first landing after a recorded frame was entered on the thread's
 * own stack, on top of a tagged entry (a recorded catcher called afresh
 * for each throw): tags its entry without the full path (which costs
 * some 400 instructions a throw there) and says whether the landing at
 * cfa is then quiet. 0 sends it to the full path. */
SF_LANDING_TEXT static int quick_tag(struct sf_thread *t, uint64_t cfa)
{
	uint64_t d = sf_shadow_depth(t);
	if (!d || d > sf_shadow_stored(t) || t->walk_frame ||
	    t->shadow_epoch != __atomic_load_n(&sf_resume_epoch, __ATOMIC_RELAXED))
		return 0;
	uint64_t *slot = sf_shadow_slot(t, d - 1), e = *slot;
	uint64_t below = d > 1 ? *sf_shadow_slot(t, d - 2) : t->shadow[-1];
	if ((e & SF_SHADOW_TAG) || !(below & SF_SHADOW_TAG) || (d > SF_SHADOW_CAP && t->shadow_top != e))
		return 0;
	uint64_t a = SF_SHADOW_ADDR(e), b = d > 1 ? SF_SHADOW_ADDR(below) : a;
	if (t->stack.own <= 0 && !sf_stack_own_holds(a)) /* looks the bounds up once */
		return 0;
	if (a < t->stack.lo || a >= t->stack.hi || b < t->stack.lo || b >= t->stack.hi)
		return 0;
	*slot = e | SF_SHADOW_TAG;
	if (d > SF_SHADOW_CAP)
		t->shadow_top = e | SF_SHADOW_TAG;
	return cfa <= a;
}

/* _Unwind_SetIP past its quiet test (setip_standin): an exception's
 * landing on the thread's own stack, told without the full path, which
 * cost some 480 instructions a landing (skeptic25t: a throw through RAII
 * frames lands in every frame's cleanup pad, each time abandoning the
 * frame the pad's frame called). The entries are scanned from the
 * innermost: those below cfa are abandoned, the first at or above it is
 * live. That is the full path's rule (shadow_pop) with the landing's
 * stack the thread's own, as every entry scanned lies on it and the
 * entries of one stack nest; another stack's entry, or the landing on
 * another stack, takes the full path. Abandoning some: popped and the
 * UNWIND_TO recorded (quick_commit), the clock read first. Abandoning
 * none: quiet (quiet_tag). Also to the full path: libgcc's layout
 * unknown, past the array, within mode's windows, a resume's resync due,
 * a walk under way, the thread not recording, tracing paused. No
 * allocation, no lock, no system call: as the full path, a handler may
 * run it. Split in three functions so that the tests save no register. */
SF_LANDING_TEXT static __attribute__((noinline)) void setip_slow(struct _Unwind_Context *ctx, _Unwind_Ptr ip);

/* The innermost entry and the CFA of the last quiet landing quiet_tag
 * left untagged. */
static __thread struct {
	uint64_t entry, cfa;
} quiet_untagged __attribute__((tls_model("initial-exec")));

/* setip_quick's quiet landing, abandoning nothing. The innermost entry is
 * tagged when that is one store (quick_tag's rule: the entry below it
 * tagged, or none, both on the own stack). Otherwise the entries pushed
 * since the last tag are tagged (land_tag, O(those entries)) only at the
 * second quiet landing of one unwinding on the same innermost entry (the
 * same entry, a CFA further out: the next throw's first landing has the
 * same entry and CFA again): a throw through
 * unrecorded frames with cleanups lands quietly many times and is
 * worth it; a throw through RAII frames lands quietly once, at its
 * thrower's cleanup, then pops the entries it pushed one by one, and
 * tagging them all there cost it 330 instructions a throw. */
SF_LANDING_TEXT static __attribute__((noinline)) void quiet_tag(uint64_t d, uint64_t cfa)
{
	struct sf_thread *t = &sf_self;
	uint64_t *sh = t->shadow, e = sh[d - 1], below = d > 1 ? sh[d - 2] : SF_SHADOW_TAG;
	if (e & SF_SHADOW_TAG)
		return;
	if ((below & SF_SHADOW_TAG) && (d == 1 || sf_stack_own_holds(SF_SHADOW_ADDR(below)))) {
		if (d == 1)
			sh[-1] = UINT64_MAX;
		sh[d - 1] = e | SF_SHADOW_TAG;
		return;
	}
	if (quiet_untagged.entry != e || cfa <= quiet_untagged.cfa) {
		quiet_untagged.entry = e;
		quiet_untagged.cfa = cfa;
		return;
	}
	land_tag(t);
}

/* setip_quick's pops, out of line so that its tests save no register:
 * the clock first (sf_now_raw's, inline), then the depth left open and
 * its UNWIND_TO. */
SF_LANDING_TEXT static __attribute__((noinline)) void quick_commit(uint32_t left)
{
	uint64_t now = sf_config.clock == SF_CLOCK_TSC ? sf_arch_counter() : sf_mono_ns();
	struct sf_thread *t = &sf_self;
	sf_buffer_note_landing(t);
	t->args_claim = 0;
	sf_shadow_set_depth(t, left);
	/* sf_record_event_at's fast path (the thread is ACTIVE). */
	uint64_t claimed = 0;
	if (!sf_suppressed && now - t->base < SF_TIME_SPAN) {
		claimed = __atomic_fetch_add(&t->cursor, sizeof(struct sf_event), __ATOMIC_RELAXED);
		if (claimed + sizeof(struct sf_event) <= t->limit) {
			struct sf_event *ev = (struct sf_event *)claimed;
			ev->time_lo = (uint32_t)now;
			__atomic_store_n(&ev->word, sf_event_word(left, SF_EV_UNWIND_TO), __ATOMIC_RELEASE);
			if (__atomic_load_n(&sf_trigger_count, __ATOMIC_RELAXED))
				sf_trigger_event(left, SF_EV_UNWIND_TO, now);
			return;
		}
	} else if (sf_suppressed) {
		return;
	}
	sf_slow_event_at(now ? now : 1, left, SF_EV_UNWIND_TO, claimed);
}

SF_LANDING_TEXT static __attribute__((noinline)) void setip_quick(struct _Unwind_Context *ctx, _Unwind_Ptr ip)
{
	const struct sf_thread *t = &sf_self;
	uint64_t d = sf_shadow_depth(t);
	/* state ACTIVE: the thread records, so tracing is enabled. */
	if (!__atomic_load_n(&setip_armed, __ATOMIC_RELAXED) || d - 1 >= SF_SHADOW_CAP ||
	    (t->walk_frame | t->window_depth) || t->state != SF_THREAD_ACTIVE ||
	    t->shadow_epoch != __atomic_load_n(&sf_resume_epoch, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&sf_tracing_off, __ATOMIC_ACQUIRE)) {
		setip_slow(ctx, ip);
		return;
	}
	/* libgcc's layout is known (armed): the landing pad is stored now,
	 * as libgcc's _Unwind_SetIP would; the full path stores it again. */
	*(_Unwind_Ptr *)((char *)ctx + CTX_RA_OFF) = ip;
	/* The own stack's bounds are 0 until known (stk.own 1), and an
	 * unmapped array's entries (sf_shadow_none) 0: both fail here. An
	 * entry's window bit does not change the order (cfa is 8-aligned).
	 * No cap on the entries scanned: the unwinder itself walked every
	 * frame they stand for, at far more than the few instructions each
	 * costs here. */
	uint64_t lo = t->stack.lo, span = t->stack.hi - lo, i = d;
	uint64_t cfa = *(const uint64_t *)((const char *)ctx + CTX_CFA_OFF);
	const uint64_t *sh = t->shadow;
	if (cfa - lo >= span)
		goto slow;
	do { /* [i, d) abandoned */
		uint64_t b = sh[i - 1];
#if defined(__x86_64__)
		__asm__("btr $62, %0" : "+r"(b) : : "cc"); /* the tag, without a mask register */
#else
		b &= ~SF_SHADOW_TAG;
#endif
		if (b - lo >= span)
			goto slow;
		if (b >= cfa)
			break;
	} while (--i);
	if (i == d)
		quiet_tag(d, cfa);
	else
		quick_commit((uint32_t)i);
	return;
slow:
	setip_slow(ctx, ip);
}

/* Disarms it at the current depth (a walk begins). */
static void land_untag(struct sf_thread *t)
{
	uint64_t d = sf_shadow_depth(t);
	t->shadow_top &= ~SF_SHADOW_TAG;
	if (!sf_shadow_mapped(t)) /* sf_shadow_none: nothing tagged, nothing to write */
		return;
	if (!d)
		t->shadow[-1] = 0;
	else if (d <= SF_SHADOW_CAP)
		t->shadow[d - 1] &= ~SF_SHADOW_TAG;
}

/* The overflow area (trampoline.S, SHADOW_DEEP, at the thread's first push
 * past the array, through sf_shadow_ov_grow): raw system calls, so errno
 * is the program's. shadow_ov is 1 while it is mapped, so a signal
 * handler's pushes past it meanwhile are counted only, and stays 1 if it
 * cannot be had (no retry at every dive). */
void sf_shadow_ov_alloc(void)
{
#ifdef SF_SHADOW_OV_CAP
	struct sf_thread *t = &sf_self;
	if (t->shadow_ov)
		return;
	t->shadow_ov = 1;
	if (!sf_shadow_mapped(t))
		return; /* entries past the array are stored only above the array's */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	long p = sf_syscall6(SYS_mmap, 0, (long)SF_SHADOW_OV_CAP * 8, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p < 0 && p > -4096)
		return;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->shadow_ov = (uint64_t)p;
#endif
}

/* Points the thread's array at `to` (the mapping, or sf_shadow_none),
 * keeping its depth, with signals held back (raw system calls: errno is
 * the program's): on x86-64 the depth is a pointer into the array
 * (shadow_tp), so a handler's push or landing between the two stores
 * would see it against the wrong array. Pushes store entries only once
 * `mapped` (the last store). */
static void shadow_move(struct sf_thread *t, uint64_t *to, int mapped)
{
	uint64_t all = ~0ull, old = 0;
	sf_syscall6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)&old, 8, 0, 0);
	uint64_t d = sf_shadow_depth(t);
#ifdef SF_SHADOW_TP
	t->shadow_plim = NULL;
	t->shadow = to;
	t->shadow_lim = to + SF_SHADOW_CAP;
	sf_shadow_set_depth(t, d);
	if (mapped)
		t->shadow_plim = to + SF_SHADOW_CAP;
#else
	t->shadow_cap = 0;
	t->shadow = to;
	sf_shadow_set_depth(t, d);
	if (mapped)
		t->shadow_cap = SF_SHADOW_CAP;
#endif
	sf_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0, 0);
}

/* The thread's array (trampoline.S, SHADOW_DEEP, at its first push,
 * through sf_shadow_blk_grow; a landing's, land_tag, for a thread that
 * throws before it pushed): entry -1 and the SF_SHADOW_CAP entries, a
 * page and a word, then SF_SHADOW_EXTRA bytes (sf_shadow_extra): the
 * second page is touched only 512 deep or by those rare paths. Raw
 * system calls, no allocation, no lock: a signal handler's pushes while it
 * is mapped (shadow_blk 1) are counted only, as are every push of a thread
 * that cannot have it (counted in sf_shadow_lost, reported at exit: its
 * landings are walked, or left to the readers' repair). */
void sf_shadow_blk_alloc(void)
{
	struct sf_thread *t = &sf_self;
	if (t->shadow_blk)
		return;
	t->shadow_blk = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	long p = sf_syscall6(SYS_mmap, 0, (long)SF_SHADOW_BLK_BYTES, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p < 0 && p > -4096) {
		__atomic_fetch_add(&sf_shadow_lost, 1, __ATOMIC_RELAXED);
		return;
	}
	shadow_move(t, (uint64_t *)p + 1, 1);
	t->shadow_blk = (uint64_t)p;
	sf_buffer_exit_hook_arm(); /* unmapped at the thread's end, whatever its state */
}

/* At the thread's end (buffer.c's key destructor): no push stores from
 * then on (the program's key destructors still run traced: counted only). */
void sf_shadow_ov_free(void)
{
	struct sf_thread *t = &sf_self;
	uint64_t blk = t->shadow_blk;
	t->shadow_blk = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	shadow_move(t, &sf_shadow_none[1], 0);
	if (blk > 1)
		sf_syscall6(SYS_munmap, (long)blk, (long)SF_SHADOW_BLK_BYTES, 0, 0, 0, 0);
#ifdef SF_SHADOW_OV_CAP
	uint64_t ov = t->shadow_ov;
	t->shadow_ov = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (ov > 1)
		sf_syscall6(SYS_munmap, (long)ov, (long)SF_SHADOW_OV_CAP * 8, 0, 0, 0, 0);
#endif
}
#endif

#ifdef SF_ARCH_SHADOW
/* Past the stored entries, at most this many frames are checked (a word
 * read each): about 1 ms a million. */
enum { PAST_STORED_MAX = 1 << 22 };

/* The frames past the stored entries, when no walk can count them (a C
 * program without libgcc_s): exact when they are one recursion, the
 * common way to get that deep. Their entries are then evenly spaced
 * between `last`, the last stored entry (depth `stored`), and
 * shadow_top, the innermost one's (depth shadow_depth), and each holds
 * the same return address; both are checked, word by word, so a
 * shadow_top left by a deeper frame that exited or frames of different
 * sizes leave the landing unrecorded as before (-1). Returns the frames
 * popped. */
static int64_t past_stored_pop(struct sf_thread *t, uint64_t sp, uint64_t last)
{
	uint64_t stored = sf_shadow_stored(t), d = sf_shadow_depth(t), n = d - stored;
	uint64_t top = SF_SHADOW_ADDR(t->shadow_top), here = (uint64_t)__builtin_frame_address(0);
	if (d <= stored || n > PAST_STORED_MAX || top >= last || top < here || sp <= top || sp > last)
		return -1;
	if (t->stack.own <= 0 && !sf_stack_own_holds(last))
		return -1;
	if (top < t->stack.lo || last >= t->stack.hi || (last - top) % n)
		return -1;
	uint64_t size = (last - top) / n, ret = *(const uint64_t *)top;
	for (uint64_t i = 1; i < n; i++)
		if (*(const uint64_t *)(last - i * size) != ret)
			return -1;
	uint64_t live = (last - sp) / size; /* entry stored + k is live iff k * size <= last - sp */
	sf_shadow_set_depth(t, stored + (live < n ? live : n));
	t->shadow_top &= ~SF_SHADOW_TAG;
	return (int64_t)(d - sf_shadow_depth(t));
}
#endif

#ifdef SF_ARCH_SHADOW
static int64_t past_scan(struct sf_thread *t, uint64_t sp, uint64_t last);
#endif
static void past_uncounted(uint64_t mark, uint64_t now);

/* Control lands with stack pointer sp: closes the recorded frames below,
 * at the time the landing began (read first: what follows is the
 * tracer's, not the abandoned frames'). env: a longjmp's jmp_buf, else
 * NULL (an exception's landing, which _Unwind_SetIP's test has already
 * found abandoning something, or could not make). */
SF_LANDING_TEXT static __attribute__((noinline)) void landing_full(struct sf_thread *t, uint64_t sp, const void *env);

SF_LANDING_TEXT static __attribute__((noinline)) void landing(uint64_t sp, const void *env)
{
	struct sf_thread *t = &sf_self;
	if (!sf_config.enabled)
		return;
	/* Before any test: a landing that abandons no recorded frame can
	 * still abandon a trampoline a signal handler interrupted between
	 * its claim and its stores (buffer.c, pad_presumed). */
	sf_buffer_note_landing(t);
#ifdef SF_ARCH_SHADOW
	if (env && abandons_nothing(t, sp))
		return;
#endif
	landing_full(t, sp, env);
}

/* The landing past landing()'s test, out of line: the test alone then
 * saves no register (the full path's frame cost 18 instructions of pushes
 * and pops at every landing, the 10,100 that abandon nothing included:
 * bench/landing_cost.sh --callgrind, longjmp none: +76 -> +62). Its clock read is
 * still the first thing it does. */
SF_LANDING_TEXT static __attribute__((noinline)) void landing_full(struct sf_thread *t, uint64_t sp, const void *env)
{
	uint64_t now = sf_now_raw();
	end_interrupted_walk(sp);
	/* A landing out of a handler leaves an args claim it interrupted for
	 * good (its records are padded as presumed abandoned): the thread's
	 * batches may end again (sf_thread.args_claim). Here, not in every
	 * landing: a landing that abandons no recorded frame keeps its few
	 * code lines (skeptic25p). */
	t->args_claim = 0;
	if (t->state != SF_THREAD_ACTIVE && t->state != SF_THREAD_DROPPING)
		return;
	/* Paused (switch.c): the readers closed every frame at the pause, and
	 * a resume starts the thread's depth afresh (sf_shadow_resync), so
	 * there is nothing to close or record. */
	if (__atomic_load_n(&sf_tracing_off, __ATOMIC_ACQUIRE))
		return;
	int64_t closed = -1;
	uint64_t mark = 0;
#ifdef SF_ARCH_SHADOW
	sf_shadow_resync(t, 0);
	closed = shadow_pop(t, sp, env);
	/* Deeper than the array, every stored frame is live (shadow_pop):
	 * the walk counts the live frames inside the last one. */
	uint64_t stored = sf_shadow_stored(t);
	if (closed < 0 && stored && sf_shadow_depth(t) > stored && !t->window_depth &&
	    SF_SHADOW_ADDR(*sf_shadow_slot(t, stored - 1)) >= sp)
		mark = SF_SHADOW_ADDR(*sf_shadow_slot(t, stored - 1));
#endif
	if (closed < 0) {
		struct walk w;
		uint64_t from[3] = {0};
#ifdef SF_ARCH_SHADOW
		if (mark && env)
			sf_arch_jmpbuf_state(env, from);
#else
		(void)env;
#endif
		if (walk_abandoned(sp, mark, from[1] ? from : NULL, &w))
			closed = close_walked(t, &w);
#ifdef SF_ARCH_SHADOW
		else if (mark)
			closed = past_stored_pop(t, sp, mark);
		if (closed < 0 && mark)
			closed = past_scan(t, sp, mark);
#endif
		if (closed < 0) {
			past_uncounted(mark, now);
			return;
		}
	}
#ifdef SF_ARCH_SHADOW
	/* The depth left open, not the count popped (trampoline.S, the
	 * shadow stack): right also when this landing interrupted a
	 * trampoline between its shadow push or pop and its event store.
	 * When a longjmp popped nothing, a half-exited frame can still be
	 * abandoned: its entry is then the slot just above the top, below
	 * sp (a handler's later pushes there are below sp too, but on a
	 * sigaltstack placed above the stack; past the array, always).
	 * Without one (the slot is empty, or an older frame's above sp),
	 * the landing abandons nothing recorded and records nothing: 12 ns
	 * a landing. An exception's landing that popped nothing records
	 * nothing: the slot is, there, almost always a callee that returned
	 * (_Unwind_SetIP says why). */
	uint64_t left = sf_shadow_depth(t), above = env && left < sf_shadow_stored(t) ? SF_SHADOW_ADDR(*sf_shadow_slot(t, left)) : 0;
	if (closed || (above && above < sp))
		sf_record_event_at(SF_EV_UNWIND_TO, left < SF_FUNC_ID_LIMIT ? (uint32_t)left : SF_FUNC_ID_LIMIT - 1,
				   now);
#else
	if (closed)
		sf_record_event_at(SF_EV_UNWIND, closed < SF_FUNC_ID_LIMIT ? (uint32_t)closed : SF_FUNC_ID_LIMIT - 1, now);
#endif
}

/* ---- exceptions and panics ---- */

/* The span of x86-64's slot pages, [lo, hi) (arch/x86_64/patch.c): a
 * far sled calls through a word in it (past_scan.c). Only widened, before
 * any sled calls through a new page. */
static struct {
	uint64_t lo, hi;
} stubs = {UINT64_MAX, 0};

void sf_unwind_note_stubs(uint64_t lo, uint64_t hi)
{
	if (lo < __atomic_load_n(&stubs.lo, __ATOMIC_RELAXED))
		__atomic_store_n(&stubs.lo, lo, __ATOMIC_RELEASE);
	if (hi > __atomic_load_n(&stubs.hi, __ATOMIC_RELAXED))
		__atomic_store_n(&stubs.hi, hi, __ATOMIC_RELEASE);
}

/* A landing past the stored entries (mark) that nothing could count
 * closes nothing, but is counted in the header (every reader warns) and
 * marked where it happened: an UNWIND of 0 frames, which no landing
 * writes otherwise (docs/FORMAT.md), so replay and dump show the place.
 * Readers before the mark close 0 frames on it, as they did on nothing. */
static void past_uncounted(uint64_t mark, uint64_t now)
{
#if defined(SF_ARCH_SHADOW) && defined(SF_SHADOW_OV_CAP)
	if (mark) {
		sf_past_uncounted();
		sf_record_event_at(SF_EV_UNWIND, SF_UNWIND_UNCOUNTED, now);
	}
#else
	(void)mark, (void)now;
#endif
}

#ifdef SF_ARCH_SHADOW
/* Frames past the stored entries that are not one recursion: counted on
 * the stack (past_scan.c), whose test of a recorded frame's return
 * address needs the slot pages' span. -1 when it cannot tell. */
static int64_t past_scan(struct sf_thread *t, uint64_t sp, uint64_t last)
{
#ifdef SF_SHADOW_OV_CAP
	return sf_past_scan_pop(t, sp, last, __atomic_load_n(&stubs.lo, __ATOMIC_ACQUIRE),
				__atomic_load_n(&stubs.hi, __ATOMIC_ACQUIRE));
#else
	(void)t, (void)sp, (void)last;
	return -1;
#endif
}
#endif


SF_LANDING_TEXT static __attribute__((noinline)) void setip_slow(struct _Unwind_Context *ctx, _Unwind_Ptr ip)
{
	/* Only for libgcc_s's contexts: another unwinder (LLVM libunwind)
	 * has its own, which our walk could not read. GetCFA of the landing
	 * frame's context is its stack pointer at the call that threw. */
	if (!R.setip)
		resolve_next();
#ifdef SF_ARCH_SHADOW
	if (__atomic_load_n(&setip_armed, __ATOMIC_ACQUIRE) &&
	    quick_tag(&sf_self, *(const uint64_t *)((const char *)ctx + CTX_CFA_OFF))) {
		*(_Unwind_Ptr *)((char *)ctx + CTX_RA_OFF) = ip;
		return;
	}
#endif
	if (R.setip == R.gcc_setip && R.getcfa)
		landing(R.getcfa(ctx), NULL);
#ifdef SF_ARCH_SHADOW
	land_tag(&sf_self);
#endif
	R.setip(ctx, ip);
}

/* Every personality routine's call to install a landing pad (52 a throw
 * through 50 frames with destructors). Most abandon no recorded frame:
 * the landing frame's CFA is at or below the innermost open entry
 * (shadow[depth - 1]; at depth 0 shadow[-1], above everything; past the
 * array shadow_top, the last entry pushed there). That is the whole test:
 * 10 instructions where libgcc's own _Unwind_SetIP is 3 (the TLS base,
 * the depth, the CFA read in place and tagged, the depth's compare with
 * the array's, the compare with the entry, then libgcc's store of the
 * landing pad made here, and the return: no jump to libgcc's), and it
 * keeps no state of its own: the shadow stack as the trampolines left it
 * is the answer, so nothing a throw, a forced unwind, a signal or a
 * longjmp does in between can make it stale. The CFA is compared with
 * SF_SHADOW_TAG set, so only an entry a landing tagged passes (land_tag:
 * it and every entry below it lie on one stack, so the landing is on
 * that stack, above the entry, and abandons nothing, or on another,
 * where no recorded frame is open); a push writes its entry raw, so a
 * frame entered since fails, as does every entry before libgcc's layout
 * is known (nothing is tagged) and during a walk (land_untag). Past the
 * array, shadow_top is the innermost entry or, after exits, a deeper
 * one's, which answers "quiet" for fewer landings, never more. The slot
 * above the top is not read: for an exception it is almost always a
 * callee that returned (a recorded function called before the throw),
 * not a frame a signal caught between its exit's pop and its EXIT store,
 * which only a throw out of an asynchronous signal handler could abandon
 * (longjmp keeps that test). The rest take the full path. */
SF_LANDING_TEXT static void setip_standin(struct _Unwind_Context *ctx, _Unwind_Ptr ip)
{
#ifdef SF_ARCH_SHADOW
	const struct sf_thread *t = &sf_self;
	uint64_t cfa = *(const uint64_t *)((const char *)ctx + CTX_CFA_OFF) | SF_SHADOW_TAG;
#ifdef SF_SHADOW_TP
	const uint64_t *tp = t->shadow_tp; /* &shadow[depth]: the innermost entry is below it */
	if (__builtin_expect(tp <= t->shadow_lim, 1)) {
		if (__builtin_expect(cfa <= tp[-1], 1))
			goto quiet;
		setip_quick(ctx, ip); /* in the array */
		return;
	} else if (cfa <= t->shadow_top) {
		goto quiet;
	}
#else
	uint64_t d = t->shadow_depth;
	if (__builtin_expect(d <= SF_SHADOW_CAP, 1)) {
		if (__builtin_expect(cfa <= t->shadow[(int64_t)d - 1], 1))
			goto quiet;
		setip_quick(ctx, ip); /* in the array */
		return;
	} else if (cfa <= t->shadow_top) {
		goto quiet;
	}
#endif
#endif
	setip_slow(ctx, ip);
	return;
#ifdef SF_ARCH_SHADOW
quiet:
	*(_Unwind_Ptr *)((char *)ctx + CTX_RA_OFF) = ip;
#endif
}

/* IRELATIVE resolvers (got_bind.c): the stand-in a reference gets. */
static uintptr_t bind_setip(void)
{
	return (uintptr_t)setip_standin;
}


/* The references the stand-ins take: those bound to libgcc_s's
 * definitions (libstdc++'s and Rust's personality routines, libgcc_s's
 * own calls through its PLT). */
static const struct sf_bind unwind_binds[] = {
	{"_Unwind_SetIP", "libgcc_s.so", bind_setip, 0},
};

const struct sf_bind *sf_unwind_binds(int *n)
{
	*n = (int)(sizeof(unwind_binds) / sizeof(unwind_binds[0]));
	return unwind_binds;
}

/* ---- longjmp ----
 * sf_arch_jmpbuf_sp (sf_arch.h) unmangles the target's stack pointer. */

/* 0 for a thread that recorded nothing: nothing to close, no claimed
 * record to pad (thread_start clears the landing mark), no walk to end.
 * Told in the wrapper from one line of the thread's state (state and
 * walk_frame share it): a thread's first landing runs cold, where each
 * line read and each call is a miss (+0.2-0.5 us a line on a loaded VM). */
static inline __attribute__((always_inline)) int landing_due(void)
{
	return sf_self.state != SF_THREAD_NEW || sf_self.walk_frame;
}

/* The frame that called setjmp is live (its CFA is above the saved stack
 * pointer); a frame it called since has its CFA at or below it, even with
 * an alloca in between. */
/* Each on a cache line of its own start (aligned(64)): a wrapper is 90
 * bytes, two lines at most wherever the section lands, not three when
 * code elsewhere shifts it (test_skeptic25p counts the lines a first
 * landing fetches). */
#define LONGJMP_WRAPPER(name, real)                                                              \
	SF_LANDING_TEXT __attribute__((visibility("default"), noreturn, aligned(64))) void name(struct __jmp_buf_tag env[1], int val) \
	{                                                                                        \
		if (!R.real)                                                                     \
			resolve_next();                                                          \
		if (landing_due())                                                               \
			landing(sf_arch_jmpbuf_sp(env), env);                                            \
		R.real((void *)env, val);                                                        \
	}

LONGJMP_WRAPPER(longjmp, longjmp)
LONGJMP_WRAPPER(_longjmp, _longjmp)
LONGJMP_WRAPPER(siglongjmp, siglongjmp)
LONGJMP_WRAPPER(__longjmp_chk, longjmp_chk)

/* ---- thread exit ----
 * pthread_exit and cancellation end in a forced unwind whose last jump
 * (glibc's internal __libc_unwind_longjmp back to start_thread) we never
 * see; the frames still open then are abandoned. The runtime's key
 * destructor (buffer.c), the first key created, so the first to run,
 * closes them here, before the program's key destructors, which then
 * nest at the thread's outermost level. A thread whose function returned
 * has none open: nothing recorded. */
void sf_unwind_thread_exit(void)
{
#ifdef SF_ARCH_SHADOW
	struct sf_thread *t = &sf_self;
	if (!sf_config.enabled || t->state != SF_THREAD_ACTIVE || __atomic_load_n(&sf_tracing_off, __ATOMIC_ACQUIRE))
		return;
	uint64_t now = sf_now_raw();
	sf_shadow_resync(t, 0);
	if (!sf_shadow_depth(t))
		return;
	sf_shadow_set_depth(t, 0);
	t->window_depth = 0;
	sf_record_event_at(SF_EV_UNWIND_TO, 0, now);
#endif
}

/* ---- a thread's first landing ----
 * It runs cold: its code (.text.hot.sf_landing, two pages) and the
 * runtime's data it reads (R, the configuration's clock and enabled
 * line, the resume epoch, the pause and trigger words, the thread's own
 * state) are in no cache of the CPU the new thread runs on, and each line
 * is a miss, each page a walk, on a VM some 100-200 ns apiece: no page
 * fault (perf record -e minor-faults: none inside a first landing,
 * traced or not), cold lines only. thread_start, at the thread's first
 * event and already a slow path (it takes a slot, maps the shadow
 * array, asks the kernel its name), asks the CPU for those lines with
 * prefetches: no load waits, nothing is mapped or faulted (a prefetch of
 * an untouched page is dropped), so no memory grows. The code's span is
 * the lowest to the highest of the landing's functions, skipped if the
 * linker spread them (more than LANDING_SPAN bytes apart). */
enum { LANDING_SPAN = 16384, LINE = 64 };

static void prefetch_span(const void *lo, const void *hi, int write)
{
	for (uintptr_t p = (uintptr_t)lo & ~(uintptr_t)(LINE - 1); p < (uintptr_t)hi; p += LINE)
		if (write)
			__builtin_prefetch((const void *)p, 1, 3);
		else
			__builtin_prefetch((const void *)p, 0, 3);
}

static void prefetch_landing_text(void)
{
	const void *fns[] = {(const void *)sf_shadow_resync, (const void *)sf_record_event_at,
			     (const void *)sf_now_raw, (const void *)sf_stack_own_holds, (const void *)sf_stack_of,
			     (const void *)sf_stack_alt, (const void *)landing, (const void *)setip_slow,
			     (const void *)setip_standin, (const void *)longjmp, (const void *)_longjmp,
			     (const void *)siglongjmp, (const void *)__longjmp_chk};
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		lo = (uintptr_t)fns[i] < lo ? (uintptr_t)fns[i] : lo;
		hi = (uintptr_t)fns[i] > hi ? (uintptr_t)fns[i] : hi;
	}
	hi += 4 * LINE; /* the last one's body: a wrapper, a few lines */
	if (hi - lo <= LANDING_SPAN)
		prefetch_span((const void *)lo, (const void *)hi, 0);
}

/* A dry run of the full path, at the thread's first event: what a
 * thread's first landing closing recorded frames spent past the cold
 * lines was the first run of that code on the CPU (its branches not yet
 * predicted, its lines and page not yet fetched for execution): TSC
 * stamps in thread 1's first landing (only the abandoned frames
 * recorded), 180 ns from the clock read to the shadow stack's answer
 * before, 50 ns after; prefetching or even loading every line of it at
 * thread_start changed nothing. The rehearsal lands at this frame, the
 * deepest there is, so every entry is live: nothing is popped, closed or
 * recorded (an exception's landing, env NULL, records only what it
 * closes), and nothing else is written (the depth is set to itself).
 * Only when that holds for certain: the thread active and not walking,
 * this frame on its own stack (no maps read), every entry stored and
 * above it and the slot above them empty or above it too (a longjmp's
 * landing records a half-exited frame there), no resume's resync due.
 * Through landing() twice, as a longjmp's (its quick test: nothing
 * abandoned) and as an exception's (the full path), whose code shares
 * the wrappers' page; the landing mark it notes is put back, and
 * so is the depth if a resume came in between (the landing's resync
 * would take it for a landing's, not this event's). */
static void landing_rehearse(struct sf_thread *t)
{
#ifdef SF_ARCH_SHADOW
	uint64_t sp = (uint64_t)__builtin_frame_address(0), d = sf_shadow_depth(t);
	if (!sf_config.enabled || t->state != SF_THREAD_ACTIVE || t->walk_frame || d > sf_shadow_stored(t) ||
	    t->shadow_epoch != __atomic_load_n(&sf_resume_epoch, __ATOMIC_RELAXED) || !sf_stack_own_holds(sp))
		return;
	for (uint64_t i = 0; i < d; i++)
		if (SF_SHADOW_ADDR(*sf_shadow_slot(t, i)) < sp)
			return;
	uint64_t above = d < sf_shadow_stored(t) ? SF_SHADOW_ADDR(*sf_shadow_slot(t, d)) : 0;
	if (above && above < sp) /* a longjmp's landing would take it for a half-exited frame */
		return;
	struct sf_landing_mark mark = sf_landing_mark; /* signals are blocked (store_event) */
	uint32_t epoch = t->shadow_epoch;
	landing(sp, &mark); /* a longjmp's quick test (env is not read past it here) */
	landing(sp, NULL);  /* the full path */
	sf_landing_mark = mark;
	if (t->shadow_epoch != epoch) { /* a resume since the test: its resync is the next event's */
		t->shadow_epoch = epoch;
		sf_shadow_set_depth(t, d);
	}
#else
	(void)t;
#endif
}

void sf_landing_warm(void)
{
	landing_rehearse(&sf_self);
	prefetch_landing_text();
	__builtin_prefetch(&R, 0, 3);
	__builtin_prefetch(&setip_armed, 0, 3);
	__builtin_prefetch(&sf_config.enabled, 0, 3);
	__builtin_prefetch(&sf_config.clock, 0, 3);
	__builtin_prefetch(&sf_resume_epoch, 0, 3);
	__builtin_prefetch(&sf_tracing_off, 0, 3);
	__builtin_prefetch(&sf_trigger_count, 0, 3);
	prefetch_span(&sf_self, &sf_self + 1, 1);
	prefetch_span(&sf_landing_mark, &sf_landing_mark + 1, 1);
}
