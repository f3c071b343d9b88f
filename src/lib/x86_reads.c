/* A straight-line walk of x86-64 code for loads from the stack arguments
 * (x86_reads.h). It decodes what compilers put at the start of a function
 * (prologue pushes, stack adjustment, moves, integer and SSE arithmetic,
 * conditional branches' fall-through) and gives up on anything else (a
 * call too: the bytes after one to a function that does not return may
 * be another block's, with another stack pointer): an
 * instruction it cannot decode ends the walk with no proof, never with a
 * wrong one. */
#include "lib/x86_reads.h"

#include <string.h>

#define MAX_INSNS 64
#define RSP 4
#define RBP 5

/* What an instruction does with its ModRM operands. */
enum {
	RD_RM = 1,     /* reads r/m */
	WR_RM = 2,     /* writes r/m (a register when mod is 3) */
	WR_REG = 4,    /* writes the reg field's general register */
	STOP = 8,      /* not followed */
	GO_ON = 16,    /* no ModRM, nothing to the stack: next */
	SP_GROUP1 = 32 /* add/sub to rsp are followed */
};

struct insn {
	const uint8_t *p, *end;
	unsigned rex, o16, f3, seg; /* seg: fs or gs, never the stack */
	unsigned mod, reg, rm;                     /* reg and rm with REX.R / REX.B */
	int mem, known;                            /* a memory operand; its base rsp or rbp, no index */
	unsigned base;                             /* RSP or RBP */
	int64_t disp;
};

struct frame {
	int64_t sp, bp; /* from the entry's rsp */
	int bp_set;
};

static int take(struct insn *in, size_t n)
{
	if ((size_t)(in->end - in->p) < n)
		return -1;
	in->p += n;
	return 0;
}

static int64_t sdisp(const uint8_t *p, unsigned size)
{
	if (size == 1)
		return (int8_t)p[0];
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* The ModRM byte and its SIB and displacement. */
static int modrm(struct insn *in)
{
	if (in->p >= in->end)
		return -1;
	uint8_t m = *in->p++;
	in->mod = m >> 6;
	in->reg = (m >> 3 & 7) | (in->rex & 4 ? 8 : 0);
	unsigned rm = m & 7;
	in->rm = rm | (in->rex & 1 ? 8 : 0);
	in->mem = in->mod != 3;
	in->known = 0;
	if (!in->mem)
		return 0;
	unsigned base = rm, has_index = 0;
	if (rm == 4) {
		if (in->p >= in->end)
			return -1;
		uint8_t sib = *in->p++;
		base = sib & 7;
		has_index = (sib >> 3 & 7) != 4 || (in->rex & 2);
		if (in->mod == 0 && base == 5) /* disp32, no base */
			return take(in, 4);
	} else if (in->mod == 0 && rm == 5) { /* rip-relative */
		return take(in, 4);
	}
	unsigned dsize = in->mod == 1 ? 1 : in->mod == 2 ? 4 : 0;
	const uint8_t *d = in->p;
	if (take(in, dsize) < 0)
		return -1;
	in->disp = dsize ? sdisp(d, dsize) : 0;
	base |= in->rex & 1 ? 8 : 0;
	in->known = !has_index && (base == RSP || base == RBP);
	in->base = base;
	return 0;
}

/* Group 1 (0x80, 0x81, 0x83): cmp (/7) writes nothing. */
static unsigned group1(const struct insn *in)
{
	return RD_RM | ((in->reg & 7) == 7 ? 0 : WR_RM) | SP_GROUP1;
}

/* The effect of a one-byte opcode op whose ModRM (if any) is decoded;
 * *imm: the immediate's size. */
static unsigned one_byte(struct insn *in, uint8_t op, unsigned *imm, int *has_modrm)
{
	unsigned z = in->o16 ? 2 : 4;
	*has_modrm = 1;
	*imm = 0;
	if (op < 0x40 && (op & 7) < 4) { /* add or adc sbb and sub xor cmp */
		int cmp = (op & 0x38) == 0x38;
		if (op & 2)
			return RD_RM | (cmp ? 0 : WR_REG);
		return RD_RM | (cmp ? 0 : WR_RM);
	}
	if (op < 0x40 && (op & 7) == 4) {
		*has_modrm = 0, *imm = 1;
		return GO_ON;
	}
	if (op < 0x40 && (op & 7) == 5) {
		*has_modrm = 0, *imm = z;
		return GO_ON;
	}
	switch (op) {
	case 0x63:
	case 0x8a:
	case 0x8b:
		return RD_RM | WR_REG;
	case 0x69:
		*imm = z;
		return RD_RM | WR_REG;
	case 0x6b:
		*imm = 1;
		return RD_RM | WR_REG;
	case 0x80:
	case 0x83:
		*imm = 1;
		return group1(in);
	case 0x81:
		*imm = z;
		return group1(in);
	case 0x84:
	case 0x85:
		return RD_RM;
	case 0x86:
	case 0x87:
		return RD_RM | WR_RM | WR_REG;
	case 0x88:
	case 0x89:
		return WR_RM;
	case 0x8d:
		return WR_REG;
	case 0xc0:
	case 0xc1:
		*imm = 1;
		return RD_RM | WR_RM;
	case 0xd0:
	case 0xd1:
	case 0xd3:
		return RD_RM | WR_RM;
	case 0xc6:
		*imm = 1;
		return (in->reg & 7) ? STOP : WR_RM;
	case 0xc7:
		*imm = z;
		return (in->reg & 7) ? STOP : WR_RM;
	case 0xf6:
	case 0xf7:
		if ((in->reg & 7) < 2)
			*imm = op == 0xf6 ? 1 : z;
		return (in->reg & 7) == 1 ? STOP : RD_RM | ((in->reg & 7) == 2 || (in->reg & 7) == 3 ? WR_RM : 0);
	case 0xfe:
		return (in->reg & 7) < 2 ? RD_RM | WR_RM : STOP;
	}
	return STOP;
}

/* Whether an SSE opcode (0x0f op) reads its r/m operand. */
static int sse_reads(uint8_t op, unsigned f3)
{
	if (op == 0x7e)
		return f3; /* movq xmm, m64; without F3 movd r/m, xmm stores */
	return op == 0x10 || op == 0x12 || op == 0x14 || op == 0x15 || op == 0x16 || op == 0x28 || op == 0x2a ||
	       (op >= 0x2c && op <= 0x2f) || (op >= 0x51 && op <= 0x70) || (op >= 0x74 && op <= 0x76) ||
	       (op >= 0xd1 && op <= 0xd5) || (op >= 0xd8 && op <= 0xe5) || (op >= 0xe8 && op <= 0xef) ||
	       (op >= 0xf1 && op <= 0xfe) || op == 0xc2 || op == 0xc6;
}

/* The effect of a two-byte opcode 0x0f op. */
static unsigned two_byte(struct insn *in, uint8_t op, unsigned *imm, int *has_modrm)
{
	*has_modrm = 1;
	*imm = 0;
	if (op >= 0x80 && op <= 0x8f) { /* jcc rel32: the fall-through */
		*has_modrm = 0, *imm = 4;
		return GO_ON;
	}
	if (op >= 0x18 && op <= 0x1f) /* hints, nops, endbr64 */
		return 0;
	if (op >= 0x40 && op <= 0x4f) /* cmovcc */
		return RD_RM | WR_REG;
	if (op >= 0x90 && op <= 0x9f) /* setcc */
		return WR_RM;
	switch (op) {
	case 0xa3:
		return RD_RM;
	case 0xab:
	case 0xb3:
	case 0xbb:
	case 0xb0:
	case 0xb1:
	case 0xc0:
	case 0xc1:
		return RD_RM | WR_RM | WR_REG;
	case 0xa4:
	case 0xac:
		*imm = 1;
		return RD_RM | WR_RM;
	case 0xa5:
	case 0xad:
		return RD_RM | WR_RM;
	case 0xaf:
	case 0xb6:
	case 0xb7:
	case 0xbe:
	case 0xbf:
	case 0xbc:
	case 0xbd:
	case 0xb8:
		return RD_RM | WR_REG;
	case 0xba:
		*imm = 1;
		return RD_RM | ((in->reg & 7) > 4 ? WR_RM : 0);
	}
	if ((op >= 0x10 && op <= 0x17) || (op >= 0x28 && op <= 0x2f) || (op >= 0x50 && op <= 0x7f) ||
	    op == 0xc2 || op == 0xc4 || op == 0xc5 || op == 0xc6 || op >= 0xd0) {
		if ((op >= 0x70 && op <= 0x73) || op == 0xc2 || op == 0xc4 || op == 0xc5 || op == 0xc6)
			*imm = 1;
		/* a general register written by the reg field, or by r/m */
		unsigned gp = op == 0x2c || op == 0x2d || op == 0x50 || op == 0xc5 || op == 0xd7 ? WR_REG : 0;
		if (op == 0x7e && !in->f3)
			gp = WR_RM;
		return (sse_reads(op, in->f3) ? RD_RM : 0) | gp;
	}
	return STOP;
}

/* A write to general register r: rsp's ends the walk (its offset is no
 * longer known), rbp's forgets it. */
static int write_gp(struct frame *f, unsigned r)
{
	if (r == RSP)
		return -1;
	if (r == RBP)
		f->bp_set = 0;
	return 0;
}

/* Whether in's memory operand starts within [lo, hi) of the stack
 * arguments. */
static int in_args(const struct insn *in, const struct frame *f, int64_t lo, int64_t hi)
{
	if (!in->mem || !in->known || in->seg || (in->base == RBP && !f->bp_set))
		return 0;
	int64_t at = (in->base == RSP ? f->sp : f->bp) + in->disp - 8;
	return at >= lo && at < hi;
}

/* rsp's change by a group-1 immediate: add (/0) or sub (/5); else -1. */
static int sp_adjust(struct insn *in, uint8_t op, const uint8_t *imm, struct frame *f)
{
	int64_t v = op == 0x81 ? sdisp(imm, 4) : (int8_t)imm[0];
	if (in->o16 || op == 0x80 || !(in->rex & 8)) /* 0x80's r/m 4 is ah or spl; without REX.W, esp */
		return -1;
	if ((in->reg & 7) == 0)
		f->sp += v;
	else if ((in->reg & 7) == 5)
		f->sp -= v;
	else
		return -1;
	return 0;
}

/* One instruction at in->p: 1 if it reads [lo, hi), 0 to go on, -1 to
 * stop. */
static int step(struct insn *in, struct frame *f, int64_t lo, int64_t hi)
{
	in->rex = in->o16 = in->f3 = in->seg = 0;
	for (;;) { /* prefixes: operand size, rep, segment (cs nop; fs: the stack protector's canary), lock; then REX */
		if (in->p >= in->end)
			return -1;
		uint8_t b = *in->p;
		if (b == 0x66)
			in->o16 = 1;
		else if (b == 0xf3)
			in->f3 = 1;
		else if (b == 0x64 || b == 0x65)
			in->seg = 1;
		else if (b != 0xf2 && b != 0x2e && b != 0x3e && b != 0xf0)
			break;
		in->p++;
	}
	if ((*in->p & 0xf0) == 0x40)
		in->rex = *in->p++ & 0xf;
	if (in->p >= in->end)
		return -1;
	uint8_t op = *in->p++;
	if (op >= 0x50 && op <= 0x5f && in->o16) /* a 2-byte push or pop */
		return -1;
	if (op >= 0x50 && op <= 0x57) {
		f->sp -= 8;
		return 0;
	}
	if (op >= 0x58 && op <= 0x5f) {
		f->sp += 8;
		return write_gp(f, (op & 7) | (in->rex & 1 ? 8 : 0));
	}
	if (op >= 0x70 && op <= 0x7f) /* jcc rel8: the fall-through */
		return take(in, 1);
	if (op >= 0xb0 && op <= 0xbf) { /* mov r, imm */
		unsigned r = (op & 7) | (in->rex & 1 ? 8 : 0);
		if (take(in, op < 0xb8 ? 1 : in->rex & 8 ? 8 : in->o16 ? 2 : 4) < 0)
			return -1;
		return write_gp(f, r);
	}
	switch (op) {
	case 0x90:
	case 0x98:
	case 0x99:
		return 0;
	case 0xa8:
		return take(in, 1);
	case 0xa9:
		return take(in, in->o16 ? 2 : 4);
	case 0x68:
		f->sp -= 8;
		return take(in, 4);
	case 0x6a:
		f->sp -= 8;
		return take(in, 1);
	}
	unsigned imm = 0, eff;
	int has_modrm;
	if (op == 0x0f) {
		if (in->p >= in->end)
			return -1;
		uint8_t op2 = *in->p++;
		if (op2 >= 0x10 && (op2 < 0x80 || op2 > 0x8f) && modrm(in) < 0)
			return -1;
		eff = two_byte(in, op2, &imm, &has_modrm);
		if (op2 < 0x10 || eff & STOP)
			return -1;
		if (!has_modrm)
			return take(in, imm);
	} else {
		/* the opcodes with ModRM: decode it before the table, which
		 * needs the reg field for groups */
		int maybe = op < 0x40 ? (op & 7) < 4 : op == 0x63 || op == 0x69 || op == 0x6b || (op >= 0x80 && op <= 0x8b) ||
								op == 0x8d || op == 0xc0 || op == 0xc1 || op == 0xc6 || op == 0xc7 ||
								op == 0xd0 || op == 0xd1 || op == 0xd3 || op == 0xf6 || op == 0xf7 || op == 0xfe;
		if (maybe && modrm(in) < 0)
			return -1;
		eff = one_byte(in, op, &imm, &has_modrm);
		if (eff & STOP || (has_modrm && !maybe))
			return -1;
		if (!has_modrm)
			return take(in, imm);
	}
	const uint8_t *immp = in->p;
	if (take(in, imm) < 0)
		return -1;
	if (!in->mem && (eff & WR_RM) && in->rm == RSP) {
		if (!(eff & SP_GROUP1) || op == 0x0f)
			return -1;
		return sp_adjust(in, op, immp, f);
	}
	if (!in->mem && op == 0x89 && (in->rex & 8) && in->reg == RSP && in->rm == RBP) { /* mov %rsp, %rbp */
		f->bp = f->sp;
		f->bp_set = 1;
		return 0;
	}
	if (!in->mem && (eff & WR_RM) && write_gp(f, in->rm) < 0)
		return -1;
	if ((eff & WR_REG) && write_gp(f, in->reg) < 0)
		return -1;
	return (eff & RD_RM) && in_args(in, f, lo, hi);
}

int x86_reads_stack_arg(const uint8_t *code, size_t len, int64_t lo, int64_t hi)
{
	struct insn in = {.p = code, .end = code + len};
	struct frame f = {0, 0, 0};
	/* XRay's entry sled: a 2-byte jump over 9 bytes of nop */
	if (len >= 11 && code[0] == 0xeb && code[1] == 0x09)
		in.p += 11;
	for (int i = 0; i < MAX_INSNS; i++) {
		int r = step(&in, &f, lo, hi);
		if (r)
			return r > 0;
	}
	return 0;
}
