/* Children started with an environment of their own stay traced.
 *
 * execve, execvpe, execle, fexecve, execveat, posix_spawn and posix_spawnp
 * take the child's environment from the caller. When it lacks the tracer's
 * variables the child would run untraced, silently. These wrappers pass the
 * given environment on exactly, plus only what is missing of:
 *   - LD_PRELOAD: this runtime's path, and libsftrace-alloc.so's when this
 *     process has it (record --alloc), put first if LD_PRELOAD is given
 *     without them;
 *   - the tracer's SFTRACE_* variables (tracer_vars: every one of
 *     format/sf_env.h) this process started with; other SFTRACE_-prefixed
 *     names are the caller's business.
 * A variable the caller set keeps the caller's value. The functions that
 * use `environ` (execv, execvp, execl, execlp, system, popen) get the
 * same, built from environ: the program may have emptied it (clearenv);
 * environ itself is never changed. syscall() with the exec numbers comes
 * here too (hooks.c, sf_exec_syscall). Every exec waits for a snapshot
 * being written and tells a parent waiting for it (below; hooks.c,
 * sf_exec_begins).
 *
 * Where a wrapper goes on to the function it stands in front of, that is
 * the next definition in lookup order (sf_real: a preload after the
 * runtime, else libc's), so that such a preload still sees the calls.
 * libc's code is never changed.
 *
 * They run in vfork children too, so they take no lock and never call
 * malloc: the new array lives on the stack (or in a fresh mapping when it
 * is large), and the real functions were looked up at start-up. */
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sf_arch.h"
#include "runtime/runtime.h"

#define MAX_VARS 24

static char self_path[4096];        /* this library, as the loader named it */
static char alloc_path[4096];       /* libsftrace-alloc.so, if loaded (record --alloc) */
static char saved[MAX_VARS][8192];  /* SF_ENV(X) "=value" at start */
static int nsaved;
static int ready;

typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
static execvpe_fn real_execve;
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);
typedef FILE *(*popen_fn)(const char *, const char *);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
			char *const[], char *const[]);
static execvpe_fn real_execvpe;
static fexecve_fn real_fexecve;
static execveat_fn real_execveat;
static spawn_fn real_posix_spawn, real_posix_spawnp;
static void spawn_compat_resolve(void);
/* glibc >= 2.38: system() and popen() run sh -c -- LINE, and popen's
 * errno is its spawn's error (before: ENOMEM) */
static int sh_dashdash;
/* glibc >= 2.41: system() returns -1 when no child can be created (EAGAIN,
 * ENOMEM), 127 only when the shell cannot run */
static int spawn_fail_minus1;
static popen_fn real_popen;
typedef int (*system_fn)(const char *);
typedef int (*fclose_fn)(FILE *);
static system_fn real_system;
static fclose_fn real_pclose, real_fclose;

static size_t slen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

/* Length of the name in "NAME=value". */
static size_t name_len(const char *kv)
{
	size_t n = 0;
	while (kv[n] && kv[n] != '=')
		n++;
	return n;
}

static int same_name(const char *a, const char *b)
{
	size_t n = name_len(a);
	return n == name_len(b) && !memcmp(a, b, n);
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = slen(s), k = slen(tail);
	return n >= k && !memcmp(s + n - k, tail, k);
}

/* The allocator interposer, as the loader named it (it always sits beside
 * this library: record preloads both). */
static int alloc_find(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	const char *name = info->dlpi_name;
	if (name && ends_with(name, "/libsftrace-alloc.so") && slen(name) < sizeof(alloc_path)) {
		memcpy(alloc_path, name, slen(name) + 1);
		return 1;
	}
	return 0;
}

static int self_find(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t me = (uintptr_t)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && me >= lo && me < lo + ph->p_memsz && info->dlpi_name) {
			size_t n = slen(info->dlpi_name);
			if (n < sizeof(self_path))
				memcpy(self_path, info->dlpi_name, n + 1);
			return 1;
		}
	}
	return 0;
}

extern char **environ;

/* Whether the running glibc (not the one built against) is at least
 * major.minor. */
static int glibc_at_least(int major, int minor)
{
	const char *v = gnu_get_libc_version();
	int ma = 0, mi = 0;
	while (*v >= '0' && *v <= '9')
		ma = ma * 10 + (*v++ - '0');
	if (*v == '.')
		v++;
	while (*v >= '0' && *v <= '9')
		mi = mi * 10 + (*v++ - '0');
	return ma > major || (ma == major && mi >= minor);
}

/* Start-up, always (init.c): the functions the wrappers call. A wrapper
 * called before that (from an earlier constructor) looks its own up. */
void sf_exec_env_resolve(void)
{
	real_execve = (execvpe_fn)sf_real("execve");
	real_execvpe = (execvpe_fn)sf_real("execvpe");
	real_fexecve = (fexecve_fn)sf_real("fexecve");
	real_execveat = (execveat_fn)sf_real("execveat");
	real_posix_spawn = (spawn_fn)sf_real("posix_spawn");
	real_posix_spawnp = (spawn_fn)sf_real("posix_spawnp");
	spawn_compat_resolve();
	sh_dashdash = glibc_at_least(2, 38);
	spawn_fail_minus1 = glibc_at_least(2, 41);
	real_popen = (popen_fn)sf_real("popen");
	real_system = (system_fn)sf_real("system");
	real_pclose = (fclose_fn)sf_real("pclose");
	real_fclose = (fclose_fn)sf_real("fclose");
}

#define REAL(var, type, name) ((var) ? (var) : ((var) = (type)sf_real(name)))

/* Every variable of the contract (format/sf_env.h): a variable added there
 * reaches such children without a change here. */
#define TRACER_VAR(name, meaning) SF_ENV(name),
static const char *const tracer_vars[] = {SF_ENV_LIST(TRACER_VAR)};
#undef TRACER_VAR
_Static_assert(sizeof(tracer_vars) / sizeof(tracer_vars[0]) <= MAX_VARS, "room for every tracer variable");

/* Whether "NAME=value" names one of tracer_vars. */
static int is_tracer_var(const char *e)
{
	for (size_t i = 0; i < sizeof(tracer_vars) / sizeof(tracer_vars[0]); i++) {
		const char *v = tracer_vars[i];
		size_t k = 0;
		while (v[k] && e[k] == v[k]) /* stops at e's NUL too: never reads past it */
			k++;
		if (!v[k] && e[k] == '=')
			return 1;
	}
	return 0;
}

/* Start-up, when tracing (init.c): remember what children need. */
void sf_exec_env_init(void)
{
	dl_iterate_phdr(self_find, (void *)(uintptr_t)sf_exec_env_init);
	dl_iterate_phdr(alloc_find, NULL);
	for (char **e = environ; e && *e && nsaved < MAX_VARS; e++) {
		size_t n = slen(*e);
		if (is_tracer_var(*e) && n < sizeof(saved[0]))
			memcpy(saved[nsaved++], *e, n + 1);
	}
	ready = self_path[0] != 0;
}

/* Whether the colon- or space-separated list holds path. */
static int list_has(const char *list, const char *path)
{
	size_t n = slen(path);
	for (const char *p = list; *p;) {
		size_t k = 0;
		while (p[k] && p[k] != ':' && p[k] != ' ')
			k++;
		if (k == n && !memcmp(p, path, n))
			return 1;
		p += k;
		if (*p)
			p++;
	}
	return 0;
}

/* The environment to give the child: envp itself when it has everything,
 * else a copy in a mapping of its own (b->mem, unmapped by env_done). Never
 * on the caller's stack: exec, system and popen are called from crash
 * handlers on an 8 KiB sigaltstack and from threads with a 16 KiB stack,
 * where glibc's own need little; an 8 KiB buffer there was a SIGSEGV
 * (skeptic24v). */
struct env_build {
	char **env;
	void *mem;
	size_t mem_len;
	size_t len; /* bytes used, from the copy's start */
};

/* The environment for an exec under a seccomp filter that would refuse
 * the new image's runtime (sandbox.c): envp without the tracer's
 * variables and without the runtime (and the allocator interposer) in
 * LD_PRELOAD, the rest as it was; envp itself when none is there. */
static char *const *env_untraced(char *const envp[], struct env_build *b)
{
	size_t n = 0, bytes = 0;
	int strip = 0;
	for (; envp[n]; n++) {
		if (is_tracer_var(envp[n]))
			strip = 1;
		if (!memcmp(envp[n], "LD_PRELOAD=", 11)) {
			strip |= list_has(envp[n] + 11, self_path) || (alloc_path[0] && list_has(envp[n] + 11, alloc_path));
			bytes = slen(envp[n]) + 1;
		}
	}
	if (!strip)
		return envp;
	size_t need = (n + 1) * sizeof(char *) + bytes;
	char *m = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return envp;
	b->mem = m;
	b->mem_len = need;
	char **env = (char **)m;
	char *s = m + (n + 1) * sizeof(char *);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (is_tracer_var(envp[i]))
			continue;
		if (memcmp(envp[i], "LD_PRELOAD=", 11)) {
			env[k++] = envp[i];
			continue;
		}
		/* LD_PRELOAD=<the others, in their order> (colon- or space-separated) */
		char *out = s;
		memcpy(out, "LD_PRELOAD=", 11);
		out += 11;
		const char *p = envp[i] + 11;
		int any = 0;
		while (*p) {
			while (*p == ':' || *p == ' ')
				p++;
			const char *q = p;
			while (*q && *q != ':' && *q != ' ')
				q++;
			size_t l = (size_t)(q - p);
			int ours = (l == slen(self_path) && !memcmp(p, self_path, l)) ||
				   (alloc_path[0] && l == slen(alloc_path) && !memcmp(p, alloc_path, l));
			if (l && !ours) {
				if (any)
					*out++ = ':';
				memcpy(out, p, l);
				out += l;
				any = 1;
			}
			p = q;
		}
		*out = 0;
		if (any)
			env[k++] = s;
	}
	env[k] = NULL;
	b->env = env;
	return env;
}

/* SFTRACE_SECCOMP_FILTERS for a child exec'd traced under filters this
 * process installed (sandbox.c: those it started with and the chain's):
 * its index in saved, set to that count, whatever the caller's value
 * (the child's runtime compares it with its own Seccomp_filters); -1
 * where the variable goes on as it came (no chain, or not given). */
static int seccomp_var(void)
{
	static const char name[] = SF_ENV(SECCOMP_FILTERS) "=";
	long v = sf_seccomp_known_filters();
	if (v < 0)
		return -1;
	for (int i = 0; i < nsaved; i++) {
		if (!same_name(saved[i], name))
			continue;
		char num[24], *q = num + sizeof(num);
		*--q = 0;
		for (unsigned long u = (unsigned long)v; u || !*q; u /= 10)
			*--q = (char)('0' + u % 10);
		size_t nl = sizeof(name) - 1, ql = slen(q);
		memcpy(saved[i], name, nl);
		memcpy(saved[i] + nl, q, ql + 1);
		return i;
	}
	return -1;
}

static char *const *env_for_child(char *const envp[], struct env_build *b)
{
	b->env = NULL;
	b->mem = NULL;
	b->len = 0;
	/* After a chroot self_path names whatever sits there in the new
	 * root: it is never preloaded into a child (trust.c). */
	if (!ready || sf_root_changed())
		return envp;
	/* A NULL environment is an empty one to the kernel (execve(path,
	 * argv, NULL)), and what clearenv() leaves in environ. */
	static char *const no_env[] = {NULL};
	if (sf_seccomp_exec_untraced()) {
		/* a seccomp filter (it survives exec) would refuse the new
		 * image's runtime: the child runs untraced. No note now (the
		 * filter may refuse its calls): the filter's install said so
		 * (sandbox.c), and a child forked under it relays a line of
		 * its own */
		sf_seccomp_exec_note();
		return env_untraced(envp ? envp : no_env, b);
	}
	if (!envp)
		envp = no_env;
	int forced = seccomp_var();
	size_t n = 0, preload_at = (size_t)-1;
	int have[MAX_VARS] = {0}, missing = 0;
	for (; envp[n]; n++) {
		if (!memcmp(envp[n], "LD_PRELOAD=", 11))
			preload_at = n;
		for (int i = 0; i < nsaved; i++)
			if (!have[i] && same_name(envp[n], saved[i]) && (i != forced || !strcmp(envp[n], saved[i])))
				have[i] = 1;
	}
	for (int i = 0; i < nsaved; i++)
		missing += !have[i];
	const char *old = preload_at != (size_t)-1 ? envp[preload_at] + 11 : "";
	int add_self = !list_has(old, self_path);
	int add_alloc = alloc_path[0] && !list_has(old, alloc_path);
	int preload_ok = !add_self && !add_alloc;
	if (!missing && preload_ok)
		return envp;
	size_t old_preload = slen(old);
	size_t ptrs = (n + (size_t)missing + 2) * sizeof(char *);
	size_t need = ptrs + 11 + slen(self_path) + 1 + slen(alloc_path) + 1 + old_preload + 1;
	b->len = need;
	char *m = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return envp;
	b->mem = m;
	b->mem_len = need;
	char **env = (char **)m;
	char *s = m + ptrs;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if ((i != preload_at || preload_ok) && (forced < 0 || !same_name(envp[i], saved[forced]) || !strcmp(envp[i], saved[forced])))
			env[k++] = envp[i];
	if (!preload_ok) {
		/* LD_PRELOAD=[<self>][:<alloc>][:<theirs>]: what is missing, first */
		env[k++] = s;
		memcpy(s, "LD_PRELOAD=", 11);
		s += 11;
		const char *parts[3] = {add_self ? self_path : "", add_alloc ? alloc_path : "", old};
		int first = 1;
		for (int i = 0; i < 3; i++) {
			size_t pl = slen(parts[i]);
			if (!pl)
				continue;
			if (!first)
				*s++ = ':';
			memcpy(s, parts[i], pl);
			s += pl;
			first = 0;
		}
		*s = 0;
	}
	for (int i = 0; i < nsaved; i++)
		if (!have[i])
			env[k++] = saved[i];
	env[k] = NULL;
	b->env = env;
	return env;
}

/* After a failed exec (a successful one never returns): free the copy,
 * keeping the exec's errno. */
static void env_done(struct env_build *b)
{
	if (b->mem) {
		int e = errno;
		munmap(b->mem, b->mem_len);
		errno = e;
	}
}

#define EXPORT __attribute__((visibility("default")))

/* Evaluates `call` with `env` bound to the child's environment for envp. */
/* too_big: whether r_, the call's result, is E2BIG. The variables the
 * child needs can take an environment the program sized to the kernel's
 * limit past it (skeptic24n: 2,096,844 bytes after clearenv ran untraced,
 * and failed traced): the call is then made again with the program's own
 * environment, as untraced, and that child goes untraced. */
#define WITH_CHILD_ENV(envp, env, call, too_big)                                   \
	({                                                                           \
		struct env_build b_;                                                 \
		char *const *env = env_for_child(envp, &b_);                         \
		__typeof__(call) r_ = (call);                                        \
		if (env != (envp) && (too_big)) {                                    \
			env = (envp);                                                \
			r_ = (call);                                                 \
		}                                                                    \
		env_done(&b_);                                                       \
		r_;                                                                  \
	})
#define SYS_TOO_BIG (r_ == -E2BIG)
#define LIBC_TOO_BIG (r_ == -1 && errno == E2BIG)
#define SPAWN_TOO_BIG (r_ == E2BIG)

/* Every exec first lets a snapshot asked for finish (snapshot.c): the
 * writer thread ends with the old image (sf_exec_begins, hooks.c), and
 * after one that failed sf_exec_failed undoes what must not outlive it. */
/* The system calls execve and execveat (a: their arguments), with the
 * child's environment: execve() and syscall() with either number
 * (hooks.c) come here. Returns -errno. */
long sf_exec_syscall(long nr, const long *a)
{
	int at = nr == SYS_execveat ? 3 : 2; /* where envp is */
	long c[6] = {a[0], a[1], a[2], a[3], a[4], a[5]};
	return WITH_CHILD_ENV((char *const *)a[at], env,
			      (c[at] = (long)env, sf_syscall6(nr, c[0], c[1], c[2], c[3], c[4], c[5])), SYS_TOO_BIG);
}

/* The wrappers call each other through these, never through the
 * exported names: a program with an execve of its own would get those
 * calls (there is no -Bsymbolic). */
static int exec_ve(const char *path, char *const argv[], char *const envp[])
{
	sf_exec_begins();
	long r = sf_exec_syscall(SYS_execve, (const long[6]){(long)path, (long)argv, (long)envp});
	errno = (int)-r;
	sf_exec_failed();
	return -1;
}

static int exec_vpe(const char *file, char *const argv[], char *const envp[])
{
	if (!REAL(real_execvpe, execvpe_fn, "execvpe"))
		return errno = ENOSYS, -1;
	sf_exec_begins();
	int r = WITH_CHILD_ENV(envp, env, real_execvpe(file, argv, env), LIBC_TOO_BIG);
	sf_exec_failed();
	return r;
}

/* execve() goes on to the next execve (a later preload's sees the call);
 * the functions glibc builds on its internal execve (execv, execl,
 * execle) make the system call, as libc's do. */
EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	if (!REAL(real_execve, execvpe_fn, "execve"))
		return exec_ve(path, argv, envp);
	sf_exec_begins();
	int r = WITH_CHILD_ENV(envp, env, real_execve(path, argv, env), LIBC_TOO_BIG);
	sf_exec_failed();
	return r;
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return exec_vpe(file, argv, envp);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	if (!REAL(real_fexecve, fexecve_fn, "fexecve"))
		return errno = ENOSYS, -1;
	sf_exec_begins();
	int r = WITH_CHILD_ENV(envp, env, real_fexecve(fd, argv, env), LIBC_TOO_BIG);
	sf_exec_failed();
	return r;
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	if (!REAL(real_execveat, execveat_fn, "execveat"))
		return errno = ENOSYS, -1;
	sf_exec_begins();
	int r = WITH_CHILD_ENV(envp, env, real_execveat(dirfd, path, argv, env, flags), LIBC_TOO_BIG);
	sf_exec_failed();
	return r;
}

/* execle(path, arg0, ..., NULL, envp) */
EXPORT int execle(const char *path, const char *arg, ...)
{
	size_t n = 1;
	va_list ap;
	va_start(ap, arg);
	while (va_arg(ap, const char *))
		n++;
	va_end(ap);
	char *argv[n + 1];
	argv[0] = (char *)arg;
	va_start(ap, arg);
	for (size_t i = 1; i <= n; i++)
		argv[i] = va_arg(ap, char *);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return exec_ve(path, argv, envp);
}

/* The functions that use `environ` get the same: the program may have
 * emptied it (clearenv, a daemon sanitizing its environment) or dropped
 * the tracer's variables from it. The child's environment is built from
 * environ plus the runtime's copy taken at start; environ itself stays
 * as the program left it. execv and execvp are execve and execvpe with
 * environ, as in glibc; execl and execlp gather their arguments into
 * them. */
EXPORT int execv(const char *path, char *const argv[])
{
	return exec_ve(path, argv, environ);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	return exec_vpe(file, argv, environ);
}

/* The NULL-ended argument list after arg, counted (without the NULL). */
#define COUNT_ARGS(arg, n)                                   \
	do {                                                 \
		va_list ap_;                                 \
		va_start(ap_, arg);                          \
		for (n = 1; va_arg(ap_, const char *); n++) \
			;                                    \
		va_end(ap_);                                 \
	} while (0)

#define GATHER_ARGS(arg, argv, n)                  \
	do {                                       \
		va_list ap_;                       \
		va_start(ap_, arg);                \
		argv[0] = (char *)arg;             \
		for (size_t i_ = 1; i_ <= n; i_++) \
			argv[i_] = va_arg(ap_, char *); \
		va_end(ap_);                       \
	} while (0)

EXPORT int execl(const char *path, const char *arg, ...)
{
	size_t n;
	COUNT_ARGS(arg, n);
	char *argv[n + 1];
	GATHER_ARGS(arg, argv, n);
	return exec_ve(path, argv, environ);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	size_t n;
	COUNT_ARGS(arg, n);
	char *argv[n + 1];
	GATHER_ARGS(arg, argv, n);
	return exec_vpe(file, argv, environ);
}

static int spawn(spawn_fn fn, pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	if (!fn)
		return ENOSYS;
	return WITH_CHILD_ENV(envp, env, fn(pid, path, fa, attr, argv, env), SPAWN_TOO_BIG);
}

/* posix_spawn and posix_spawnp carry glibc's versions of them
 * (SF_GLIBC_SPAWN_VERSION, arch/<arch>/sf_arch.h; exports.map), each
 * version going on to libc's of the same version: a program binds to the
 * one it was linked against, as it does untraced. Unversioned, they stood
 * in front of every version, and a program linked against x86-64's first
 * one (posix_spawn@GLIBC_2.2.5, which runs a file without "#!" through
 * /bin/sh) got the default's behaviour: ENOEXEC, the script never ran
 * (skeptic24k). dlsym without a version finds the default one, dlvsym
 * finds the version it names, here first as in libc. */
EXPORT int sf_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			  const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return spawn(REAL(real_posix_spawn, spawn_fn, "posix_spawn"), pid, path, fa, attr, argv, envp);
}
__asm__(".symver sf_posix_spawn, posix_spawn@@" SF_GLIBC_SPAWN_VERSION ", remove");

EXPORT int sf_posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			   const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return spawn(REAL(real_posix_spawnp, spawn_fn, "posix_spawnp"), pid, file, fa, attr, argv, envp);
}
__asm__(".symver sf_posix_spawnp, posix_spawnp@@" SF_GLIBC_SPAWN_VERSION ", remove");

#ifdef SF_GLIBC_SPAWN_COMPAT
/* The first versions (glibc's __posix_spawn_compat: __spawni with
 * SPAWN_XFLAGS_TRY_SHELL): the next definition of that version (libc's). */
static spawn_fn real_spawn_compat, real_spawnp_compat;
#define REAL_COMPAT(var, name) \
	((var) ? (var) : ((var) = (spawn_fn)sf_real_v(name, SF_GLIBC_SPAWN_COMPAT)))

EXPORT int sf_posix_spawn_compat(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
				 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return spawn(REAL_COMPAT(real_spawn_compat, "posix_spawn"), pid, path, fa, attr, argv, envp);
}
__asm__(".symver sf_posix_spawn_compat, posix_spawn@" SF_GLIBC_SPAWN_COMPAT ", remove");

EXPORT int sf_posix_spawnp_compat(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
				  const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	return spawn(REAL_COMPAT(real_spawnp_compat, "posix_spawnp"), pid, file, fa, attr, argv, envp);
}
__asm__(".symver sf_posix_spawnp_compat, posix_spawnp@" SF_GLIBC_SPAWN_COMPAT ", remove");

static void spawn_compat_resolve(void)
{
	real_spawn_compat = (spawn_fn)sf_real_v("posix_spawn", SF_GLIBC_SPAWN_COMPAT);
	real_spawnp_compat = (spawn_fn)sf_real_v("posix_spawnp", SF_GLIBC_SPAWN_COMPAT);
}
#else
static void spawn_compat_resolve(void)
{
}
#endif

/* system() and popen() when the child's environment needs the tracer's
 * variables: glibc's spawn their shell from inside libc with `environ`,
 * out of reach, and libc's code is never changed (a program reading its
 * bytes, an integrity check, sees libc's own), so the runtime runs its
 * own copy of glibc's, step by step, with the child's environment given
 * explicitly. Only then: when environ holds everything (the common case)
 * the wrappers call the next system() and popen() in lookup order (a
 * preload after the runtime, else libc's), as untraced.
 *
 * glibc's reach sigaction, waitpid, posix_spawn and the rest inside
 * libc, never through a program's definitions of them: the copies call
 * libc's own, found in libc's symbol table (elf_sym.c). Through their
 * exported names they bound to the executable's (there is no
 * -Bsymbolic), and RTLD_NEXT finds a later preload's. */
typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef pid_t (*waitpid_fn)(pid_t, int *, int);
typedef int (*mutex_fn)(pthread_mutex_t *);
typedef int (*fa_init_fn)(posix_spawn_file_actions_t *);
typedef int (*fa_dup2_fn)(posix_spawn_file_actions_t *, int, int);
typedef int (*fa_close_fn)(posix_spawn_file_actions_t *, int);
typedef FILE *(*fdopen_fn)(int, const char *);
typedef int (*cancelstate_fn)(int, int *);
static struct {
	sigaction_fn sigaction;
	waitpid_fn waitpid;
	spawn_fn posix_spawn;
	mutex_fn lock, unlock; /* popen's lock (below) */
	fa_init_fn fa_init, fa_destroy;
	fa_dup2_fn fa_dup2;
	fa_close_fn fa_close;
	fdopen_fn fdopen;
	fclose_fn fclose;
	cancelstate_fn cancelstate;
} own;

/* libc's own definition of name; the next one (sf_real) if libc's table lacks it. */
static void *libc_own(const char *name)
{
	void *p = sf_sym_lib("libc.so", name);
	return p ? p : sf_real(name);
}

static int libc_own_ready(void)
{
	if (!own.waitpid) {
		own.sigaction = (sigaction_fn)libc_own("sigaction");
		own.posix_spawn = (spawn_fn)libc_own("posix_spawn");
		own.lock = (mutex_fn)libc_own("pthread_mutex_lock");
		own.unlock = (mutex_fn)libc_own("pthread_mutex_unlock");
		own.fa_init = (fa_init_fn)libc_own("posix_spawn_file_actions_init");
		own.fa_destroy = (fa_init_fn)libc_own("posix_spawn_file_actions_destroy");
		own.fa_dup2 = (fa_dup2_fn)libc_own("posix_spawn_file_actions_adddup2");
		own.fa_close = (fa_close_fn)libc_own("posix_spawn_file_actions_addclose");
		own.fdopen = (fdopen_fn)libc_own("fdopen");
		own.fclose = (fclose_fn)libc_own("fclose");
		own.cancelstate = (cancelstate_fn)libc_own("pthread_setcancelstate");
		__atomic_store_n(&own.waitpid, (waitpid_fn)libc_own("waitpid"), __ATOMIC_RELEASE);
	}
	return own.waitpid && own.sigaction && own.posix_spawn && own.lock && own.unlock && own.fa_init &&
	       own.fa_destroy && own.fa_dup2 && own.fa_close && own.fdopen && own.fclose && own.cancelstate;
}

/* Whether env (from env_for_child(environ)) is environ itself: nothing
 * missing (or nothing to add: not tracing, or after a chroot), libc's own
 * functions give the child what it needs. */
static int env_is_environ(char *const *env)
{
	return env == environ;
}

/* ---- system ---- */

/* glibc's sysdeps/posix/system.c: SIGINT and SIGQUIT ignored while any
 * thread waits in system() (counted), SIGCHLD blocked, the shell spawned
 * with the caller's mask and those two reset to default unless they were
 * ignored, 127 as the shell's exit status when it cannot be spawned, at a
 * cancellation the child killed and reaped, `sh -c LINE` with "--" before
 * LINE only where the running glibc passes it (2.38). waitpid stays
 * libc's (not the bare wait4): it is the cancellation point glibc's
 * system waits in. The count's lock is a word taken with signals
 * blocked, held for two sigaction calls; the spawn attributes are filled
 * in place, as posix_spawnattr_init and its setters do. */
static int system_lock;
static int system_users; /* callers in system_in */
static int system_glibc; /* the wrapper's callers in glibc's system */
static int system_saved; /* system_intr and system_quit hold the program's dispositions */
static struct sigaction system_intr, system_quit;

static void system_lock_take(sigset_t *old)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, old);
	while (__atomic_test_and_set(&system_lock, __ATOMIC_ACQUIRE))
		sf_arch_cpu_relax();
}

static void system_lock_drop(const sigset_t *old)
{
	__atomic_clear(&system_lock, __ATOMIC_RELEASE);
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* Under system_lock: the program's dispositions saved, SIGINT and
 * SIGQUIT ignored. */
static void system_ignore(void)
{
	struct sigaction ign = {.sa_handler = SIG_IGN};
	sigemptyset(&ign.sa_mask);
	own.sigaction(SIGINT, &ign, &system_intr);
	own.sigaction(SIGQUIT, &ign, &system_quit);
	system_saved = 1;
}

struct system_wait {
	pid_t pid;
	sigset_t omask;
};

/* The dispositions back when the last caller leaves; the caller's mask
 * back at every return (omask; NULL at a cancellation: glibc's cancel
 * handler leaves it). glibc before 2.38 put the mask back only when the
 * last caller left (SIGCHLD blocked for good in a thread whose call
 * overlapped another's, BZ #30163), but distributions carry the fix
 * without the version (Debian's 2.36): the fixed behaviour, always. */
static void system_restore(const sigset_t *omask)
{
	sigset_t old;
	system_lock_take(&old);
	int last = --system_users == 0;
	if (last && system_saved) {
		own.sigaction(SIGINT, &system_intr, NULL);
		own.sigaction(SIGQUIT, &system_quit, NULL);
		system_saved = 0;
	}
	system_lock_drop(&old);
	if (omask)
		sigprocmask(SIG_SETMASK, omask, NULL);
}

static void system_cancelled(void *arg)
{
	struct system_wait *w = arg;
	sf_syscall3(SYS_kill, w->pid, SIGKILL, 0);
	while (own.waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
		;
	system_restore(NULL);
}

static int system_in(const char *line, char *const env[])
{
	if (!libc_own_ready())
		return errno = ENOSYS, -1;
	sigset_t old;
	system_lock_take(&old);
	/* While glibc's system runs (called through the wrapper) it has
	 * the program's dispositions saved and SIG_IGN set: saving now would
	 * save its SIG_IGN (system_from_glibc takes over when it ends). */
	if (system_users++ == 0 && !system_glibc)
		system_ignore();
	system_lock_drop(&old);
	struct system_wait w = {.pid = -1};
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &w.omask);
	posix_spawnattr_t attr;
	memset(&attr, 0, sizeof(attr));
	attr.__flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
	attr.__ss = w.omask;
	if (system_intr.sa_handler != SIG_IGN)
		sigaddset(&attr.__sd, SIGINT);
	if (system_quit.sa_handler != SIG_IGN)
		sigaddset(&attr.__sd, SIGQUIT);
	/* glibc passes "--" since 2.38 only: before, a line starting with
	 * '-' is the shell's options, and this one does the same */
	char *argv[] = {"sh", "-c", "--", (char *)line, NULL};
	if (!sh_dashdash)
		argv[2] = (char *)line, argv[3] = NULL;
	int status = -1;
	int ret = own.posix_spawn(&w.pid, "/bin/sh", NULL, &attr, argv, env);
	if (ret == E2BIG && env != environ) /* as WITH_CHILD_ENV: the program's own, untraced */
		ret = own.posix_spawn(&w.pid, "/bin/sh", NULL, &attr, argv, environ);
	if (ret == 0) {
		pthread_cleanup_push(system_cancelled, &w);
		pid_t r;
		while ((r = own.waitpid(w.pid, &status, 0)) < 0 && errno == EINTR)
			;
		if (r != w.pid)
			status = -1;
		pthread_cleanup_pop(0);
	} else if (spawn_fail_minus1 && (ret == EAGAIN || ret == ENOMEM)) {
		status = -1; /* no child could be created (glibc 2.41, BZ #32450) */
	} else {
		status = W_EXITCODE(127, 0);
	}
	system_restore(&w.omask);
	if (ret != 0)
		errno = ret;
	return status;
}

/* Whether this call goes to glibc's system: environ holds everything
 * and no call of the copy waits (each implementation keeps a count of
 * callers, and one that overlapped the other put back the SIG_IGN the
 * other had set: SIGINT ignored for good, skeptic24v). Counted then. */
static int system_to_glibc(char *const *env)
{
	sigset_t old;
	system_lock_take(&old);
	int to = env_is_environ(env) && !system_users && REAL(real_system, system_fn, "system");
	system_glibc += to;
	system_lock_drop(&old);
	return to;
}

/* After glibc's system: its last caller gone, it has put the program's
 * dispositions back; a copy's call that started under it (the
 * environment emptied meanwhile) still waits, and now saves them and
 * ignores the signals itself, as glibc's shared count would have kept
 * them (a window of two sigaction calls where the program's handler is
 * in place). */
static void system_from_glibc(void)
{
	sigset_t old;
	system_lock_take(&old);
	if (--system_glibc == 0 && system_users && !system_saved)
		system_ignore();
	system_lock_drop(&old);
}

static void system_glibc_cancelled(void *arg)
{
	(void)arg;
	system_from_glibc();
}

/* glibc's system is a cancellation point: the count is kept right there too. */
static __attribute__((noinline)) int system_glibc_call(const char *line)
{
	int r;
	pthread_cleanup_push(system_glibc_cancelled, NULL);
	r = real_system(line);
	pthread_cleanup_pop(0);
	int e = errno;
	system_from_glibc();
	errno = e;
	return r;
}

/* glibc's system reached without the wrapper (a libc handle, a
 * RTLD_DEEPBIND library) while the copy runs keeps a count of its own:
 * that overlap can still leave SIG_IGN behind. */
EXPORT int system(const char *line)
{
	struct env_build b;
	char *const *env = env_for_child(environ, &b);
	int r;
	if (system_to_glibc(env))
		r = system_glibc_call(line);
	else
		r = line ? system_in(line, env) : system_in("exit 0", env) == 0;
	env_done(&b);
	return r;
}

/* ---- popen, pclose ---- */

/* Every stream the wrappers' popen returned and pclose has not closed:
 * the copy's own (pid kept here: pclose and fclose wait for it) and
 * those of glibc's popen (pid 0: glibc's pclose knows them). POSIX has
 * every new popen child close the streams earlier popen calls left open;
 * glibc closes those of its private list, the copy those of this table,
 * which holds glibc's too (a copy that knew only its own left glibc's
 * open in its child: a pclose of the earlier stream waited for the later
 * child, cat never saw EOF; skeptic24x). glibc's list does not hold the
 * copy's, so while one of the copy's is open every popen is the copy's.
 * Fixed chunks, a first one in place and more mapped on demand, never
 * moved or freed: an entry is free when its fp is NULL. Changed under
 * popen_lock (recursive, as glibc's popen lock is: a signal handler's
 * popen that interrupted a popen of the same thread goes on). */
struct popen_ent {
	FILE *fp;
	pid_t pid; /* the copy's child; 0: glibc's stream */
	int fd;    /* the stream's descriptor, as popen returned it */
};
#define POPEN_CHUNK 64
struct popen_chunk {
	struct popen_ent e[POPEN_CHUNK];
	struct popen_chunk *next;
};
static struct popen_chunk popen_first;
static pthread_mutex_t popen_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static int popen_live; /* entries in use */
static int popen_own;  /* of which the copy's */

static void popen_unlock(void *arg)
{
	(void)arg;
	own.unlock(&popen_lock);
}

/* Under popen_lock. 0, or -1 with no memory for another chunk. */
static int popen_add(FILE *fp, pid_t pid, int fd)
{
	struct popen_chunk *c = &popen_first;
	for (;;) {
		for (int i = 0; i < POPEN_CHUNK; i++) {
			if (!c->e[i].fp) {
				c->e[i].pid = pid;
				c->e[i].fd = fd;
				__atomic_store_n(&c->e[i].fp, fp, __ATOMIC_RELEASE);
				__atomic_add_fetch(&popen_live, 1, __ATOMIC_RELEASE);
				if (pid)
					__atomic_add_fetch(&popen_own, 1, __ATOMIC_RELEASE);
				return 0;
			}
		}
		if (!c->next) {
			void *m = mmap(NULL, sizeof(struct popen_chunk), PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m == MAP_FAILED)
				return -1;
			__atomic_store_n(&c->next, (struct popen_chunk *)m, __ATOMIC_RELEASE);
		}
		c = c->next;
	}
}

/* fp's entry taken out of the table into *out; 0 if fp is not there. */
static int popen_take(FILE *fp, struct popen_ent *out)
{
	if (!fp || !__atomic_load_n(&popen_live, __ATOMIC_ACQUIRE) || !libc_own_ready())
		return 0;
	int found = 0;
	own.lock(&popen_lock);
	for (struct popen_chunk *c = &popen_first; c && !found; c = c->next)
		for (int i = 0; i < POPEN_CHUNK && !found; i++)
			if (c->e[i].fp == fp) {
				*out = c->e[i];
				c->e[i].fp = NULL;
				__atomic_sub_fetch(&popen_live, 1, __ATOMIC_RELEASE);
				if (out->pid)
					__atomic_sub_fetch(&popen_own, 1, __ATOMIC_RELEASE);
				found = 1;
			}
	own.unlock(&popen_lock);
	return found;
}

/* The mode, by glibc's rule (libio/iopopen.c): 'r', 'w', 'e' in any
 * order, exactly one of r and w; else EINVAL. */
static int popen_mode(const char *mode, int *do_read, int *do_cloexec)
{
	int r = 0, w = 0, e = 0;
	for (; *mode; mode++) {
		if (*mode == 'r')
			r = 1;
		else if (*mode == 'w')
			w = 1;
		else if (*mode == 'e')
			e = 1;
		else
			return -1;
	}
	if (!(r ^ w))
		return -1;
	*do_read = r;
	*do_cloexec = e;
	return 0;
}

/* Under popen_lock: the file actions (the child's end at 0 or 1, every
 * stream of the table closed but one at that number) and the spawn of
 * `sh -c CMD` with env. 0 or an error number. */
static int popen_spawn(pid_t *pid, const char *cmd, char *const env[], int child_fd, int child_pipe_fd)
{
	posix_spawn_file_actions_t fa;
	own.fa_init(&fa);
	int err = own.fa_dup2(&fa, child_fd, child_pipe_fd);
	for (struct popen_chunk *c = &popen_first; c && !err; c = c->next)
		for (int i = 0; i < POPEN_CHUNK && !err; i++)
			if (c->e[i].fp && c->e[i].fd != child_pipe_fd)
				err = own.fa_close(&fa, c->e[i].fd);
	/* glibc passes "--" since 2.38, as in system() */
	char *argv[] = {"sh", "-c", "--", (char *)cmd, NULL};
	if (!sh_dashdash)
		argv[2] = (char *)cmd, argv[3] = NULL;
	if (!err)
		err = own.posix_spawn(pid, "/bin/sh", &fa, NULL, argv, env);
	if (err == E2BIG && env != environ) /* as WITH_CHILD_ENV: the program's own, untraced */
		err = own.posix_spawn(pid, "/bin/sh", &fa, NULL, argv, environ);
	own.fa_destroy(&fa);
	return err;
}

/* popen_spawn under popen_lock, and the stream into the table: glibc
 * holds its list's lock the same way. 0 or an error number. */
static __attribute__((noinline)) int popen_spawn_locked(FILE *fp, const char *cmd, char *const env[], int child_fd,
							int child_pipe_fd, int parent_fd)
{
	pid_t pid = 0;
	int err;
	own.lock(&popen_lock);
	pthread_cleanup_push(popen_unlock, NULL);
	err = popen_spawn(&pid, cmd, env, child_fd, child_pipe_fd);
	if (!err && popen_add(fp, pid, parent_fd) < 0) {
		sf_syscall3(SYS_kill, pid, SIGKILL, 0);
		while (own.waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		err = ENOMEM;
	}
	pthread_cleanup_pop(1);
	return err;
}

/* glibc's _IO_new_proc_open, with env: a pipe made close-on-exec (the
 * child's end moved off the number it takes in the child), the stream on
 * the parent's end, the shell spawned, the child's end closed, the
 * parent's close-on-exec kept only for mode 'e'. Any failure after the
 * pipe: both ends closed, errno ENOMEM (glibc < 2.38) or the failure's. Bare system calls for
 * the descriptors, as glibc's own calls are not the program's. */
static FILE *popen_copy(const char *cmd, const char *mode, char *const env[])
{
	int do_read, do_cloexec;
	if (popen_mode(mode, &do_read, &do_cloexec) < 0)
		return errno = EINVAL, NULL;
	if (!libc_own_ready())
		return errno = ENOSYS, NULL;
	int fds[2];
	long r = sf_syscall3(SYS_pipe2, (long)fds, O_CLOEXEC, 0);
	if (r < 0)
		return errno = (int)-r, NULL;
	int parent = do_read ? 0 : 1, child = 1 - parent, child_pipe_fd = do_read ? 1 : 0;
	FILE *fp = NULL;
	int err = 0;
	if (fds[child] == child_pipe_fd) {
		long t = sf_syscall3(SYS_fcntl, fds[child], F_DUPFD_CLOEXEC, 0);
		if (t < 0) {
			err = (int)-t;
			goto fail;
		}
		sf_syscall3(SYS_close, fds[child], 0, 0);
		fds[child] = (int)t;
	}
	fp = own.fdopen(fds[parent], do_read ? "r" : "w");
	if (!fp) {
		err = errno;
		goto fail;
	}
	err = popen_spawn_locked(fp, cmd, env, fds[child], child_pipe_fd, fds[parent]);
	if (err)
		goto fail;
	sf_syscall3(SYS_close, fds[child], 0, 0);
	if (!do_cloexec)
		sf_syscall3(SYS_fcntl, fds[parent], F_SETFD, 0);
	return fp;
fail:
	sf_syscall3(SYS_close, fds[child], 0, 0);
	if (fp)
		own.fclose(fp); /* closes the parent's end */
	else
		sf_syscall3(SYS_close, fds[parent], 0, 0);
	/* ENOMEM whatever failed before glibc 2.38; the failure's own error
	 * since (BZ #29016, the same release as "--") */
	errno = sh_dashdash ? err : ENOMEM;
	return NULL;
}

/* glibc's popen, then its stream into the table. Under popen_lock, so
 * that a copy's popen in another thread sees it in the table once glibc
 * has it in its list. */
static FILE *popen_glibc(const char *cmd, const char *mode)
{
	FILE *fp;
	own.lock(&popen_lock);
	pthread_cleanup_push(popen_unlock, NULL);
	fp = real_popen(cmd, mode);
	if (fp && popen_add(fp, 0, fp->_fileno) < 0)
		sf_rt_message("popen: ", "no memory for the table of streams", "a later popen child may keep it open");
	pthread_cleanup_pop(1);
	return fp;
}

EXPORT FILE *popen(const char *cmd, const char *mode)
{
	if (!libc_own_ready() || !REAL(real_popen, popen_fn, "popen"))
		return errno = ENOSYS, NULL;
	struct env_build b;
	char *const *env = env_for_child(environ, &b);
	FILE *fp;
	if (env_is_environ(env) && !__atomic_load_n(&popen_own, __ATOMIC_ACQUIRE))
		fp = popen_glibc(cmd, mode);
	else
		fp = popen_copy(cmd, mode, env);
	env_done(&b);
	return fp;
}

/* glibc's _IO_new_proc_close after its unlink: the stream closed (its
 * buffer flushed first), then the child waited for with cancellation
 * disabled, again after EINTR; the child's status, or -1 when the wait
 * fails or (status 0) the flush or close did. */
static int pclose_copy(FILE *fp, pid_t pid)
{
	int closed = own.fclose(fp);
	int status = 0, state;
	pid_t w;
	do {
		own.cancelstate(PTHREAD_CANCEL_DISABLE, &state);
		w = own.waitpid(pid, &status, 0);
		own.cancelstate(state, NULL);
	} while (w == -1 && errno == EINTR);
	if (w == -1)
		return -1;
	return status ? status : closed;
}

EXPORT int pclose(FILE *fp)
{
	struct popen_ent e;
	if (popen_take(fp, &e) && e.pid)
		return pclose_copy(fp, e.pid);
	return REAL(real_pclose, fclose_fn, "pclose") ? real_pclose(fp) : (errno = ENOSYS, -1);
}

/* fclose of a popen stream is glibc's pclose (the same close function):
 * it waits for the child and returns its status. One load when no popen
 * stream is open. */
EXPORT int fclose(FILE *fp)
{
	struct popen_ent e;
	if (__atomic_load_n(&popen_live, __ATOMIC_ACQUIRE) && popen_take(fp, &e) && e.pid)
		return pclose_copy(fp, e.pid);
	return REAL(real_fclose, fclose_fn, "fclose") ? real_fclose(fp) : (errno = ENOSYS, EOF);
}

void sf_exec_env_after_fork_child(void)
{
	/* held by another thread for two sigaction calls at most (signals
	 * blocked: never by the forking one); that thread is not here */
	__atomic_clear(&system_lock, __ATOMIC_RELAXED);
	pthread_mutex_t fresh = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	popen_lock = fresh;
}
