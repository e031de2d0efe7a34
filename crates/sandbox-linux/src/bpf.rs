//! The seccomp filter as one classic BPF program, built from the refusals `seccomp.rs` decides.
//!
//! Why not `seccompiler`'s own program (it still loads this one, and the tests compare the two
//! verdict by verdict): it gives one action per program, so refusing with EPERM and with ENOSYS
//! took two programs and the x32 guard a third, and it tests the system call number against
//! each refused call in turn. Both cost every launch: each program the kernel loads is checked,
//! translated and compiled, and for each of the ~450 system call numbers the kernel runs the
//! program once at load time to learn which calls it always allows; a chain of 35 numbers is
//! run to its end for almost all of them. Here there is one program, each rule carries its own
//! action, and the number is found by a binary search (six tests instead of up to 35), which
//! also shortens every filtered call the chat makes (`openat` among them).
//!
//! The program: check the architecture (another one ends the process), load the number, refuse
//! the x32 numbers (x86_64), then the search; each refused call tests its rules in order, the
//! first whose conditions all hold gives its action, and a call no rule matches is allowed.
//! Neighbouring rules that differ only in which single bit one argument has are tested as one
//! (`JSET` of their bits). Each action is returned by one instruction, in a pool at the end of
//! the program: the test that decides a verdict jumps there (a call refused whatever its
//! arguments is one test of its number, the last test of a rule jumps to the rule's action and
//! a failing one of the last rule to the allow), where a return of their own for each rule and
//! each leaf of the search were 106 of 239 instructions. The plan's program on x86_64 below
//! Landlock ABI 9 is 137 instructions for the same verdicts (239 with those returns, 335
//! without the merging), 165 with the IPC calls refused (313, the plan without namespaces).
//! A jump the pool is out of reach for (8 bits) still gets there: see [`Asm`].
//! Arguments are compared as their low 32-bit words, as `seccomp.rs` explains.

use std::collections::BTreeSet;

use seccompiler::sock_filter;

/// How one argument is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cmp {
    Eq(u32),
    Ne(u32),
    /// `arg & mask == value`.
    MaskedEq {
        mask: u32,
        value: u32,
    },
}

/// One condition: argument `arg` (0 to 5) compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cond {
    pub arg: u8,
    pub cmp: Cmp,
}

/// A rule of one call: when every condition holds (none: always), return `ret`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Rule {
    pub conds: Vec<Cond>,
    pub ret: u32,
}

/// The whole filter: the architecture it is for, whether the x32 numbers are refused, and each
/// filtered call's rules, with its number: sorted by number, a call's rules in the order they
/// are tested. One list, not a list per call: the program is built at every launch, and the
/// allocations were most of its time.
#[derive(Debug, Clone, Default)]
pub(super) struct Filter {
    pub arch: u32,
    pub refuse_x32: bool,
    pub rules: Vec<(u32, Rule)>,
}

pub(super) const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
pub(super) const AUDIT_ARCH_AARCH64: u32 = 0xC000_00B7;
pub(super) const AUDIT_ARCH_RISCV64: u32 = 0xC000_00F3;
const X32_SYSCALL_BIT: u32 = 0x4000_0000;
const SIGN_BIT: u32 = 0x8000_0000;

// Offsets in `struct seccomp_data`: nr, arch, instruction pointer, then six 64-bit arguments
// (their low words first: the little-endian architectures built here).
const NR: u32 = 0;
const ARCH: u32 = 4;
fn arg_low(arg: u8) -> u32 {
    16 + 8 * u32::from(arg)
}

const LD_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

pub(super) const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
pub(super) fn errno(e: i32) -> u32 {
    libc::SECCOMP_RET_ERRNO | (e as u32 & libc::SECCOMP_RET_DATA)
}

fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

/// The kernel refuses a program longer than this (`BPF_MAXINSNS`).
const MAX_INSTRUCTIONS: usize = 4096;

impl Filter {
    /// The program, ready for `seccompiler::apply_filter`.
    pub fn compile(&self) -> Result<Vec<sock_filter>, String> {
        // Room for the plans' programs (137 to 165 instructions) and their labels, so that the
        // list is not grown and copied on the way.
        let mut asm = Asm {
            ops: Vec::with_capacity(256),
            labels: 0,
        };
        asm.stmt(LD_ABS, ARCH);
        // Another architecture (an i386 `int 0x80` on x86_64): end the process.
        asm.jump(
            JEQ_K,
            self.arch,
            To::Next,
            To::Return(libc::SECCOMP_RET_KILL_PROCESS),
        );
        asm.stmt(LD_ABS, NR);
        if self.refuse_x32 {
            // At or above the sign bit the number is no x32 call (the kernel refuses negative
            // ones): go on to the search.
            let search = asm.label();
            asm.jump(JGE_K, SIGN_BIT, To::Label(search), To::Next);
            asm.jump(
                JGE_K,
                X32_SYSCALL_BIT,
                To::Return(errno(libc::EPERM)),
                To::Label(search),
            );
            asm.mark(search);
        }
        // The search halves a list of calls: an unsorted one would send a number the wrong way
        // and let its call through.
        if !self.rules.is_sorted_by_key(|(nr, _)| *nr) {
            return Err("the seccomp filter's rules are not sorted by call number".into());
        }
        let calls: Vec<(u32, &[(u32, Rule)])> = self
            .rules
            .chunk_by(|a, b| a.0 == b.0)
            .map(|run| (run[0].0, run))
            .collect();
        search(&mut asm, &calls, &mut Vec::new());
        let program = asm.assemble();
        if program.len() > MAX_INSTRUCTIONS {
            return Err(format!(
                "the seccomp program is {} instructions long; the kernel loads at most {MAX_INSTRUCTIONS}",
                program.len()
            ));
        }
        Ok(program)
    }
}

/// A rule as the program tests it: [`Rule`]'s conditions, where a test of single bits may stand
/// for several rules (see [`merged`]): then the test at `bits.0` is `AnySet(bits.1)`.
///
/// It borrows its rule rather than holding tests of its own: a list of tests for each rule, and
/// a list of rules for each call, were most of the allocations of the program's build, which
/// every launch pays for.
#[derive(Debug, Clone, Copy)]
struct Alternative<'a> {
    rule: &'a Rule,
    bits: Option<(usize, u32)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Test {
    Eq(u32),
    Ne(u32),
    MaskedEq {
        mask: u32,
        value: u32,
    },
    /// `arg & mask != 0`: one `JSET`.
    AnySet(u32),
}

/// How a condition is tested: a single-bit `MaskedEq` as `AnySet`, the others as written.
fn test_of(cond: &Cond) -> (u8, Test) {
    let test = match cond.cmp {
        Cmp::Eq(v) => Test::Eq(v),
        Cmp::Ne(v) => Test::Ne(v),
        Cmp::MaskedEq { mask, value } if mask == value && mask.is_power_of_two() => {
            Test::AnySet(mask)
        }
        Cmp::MaskedEq { mask, value } => Test::MaskedEq { mask, value },
    };
    (cond.arg, test)
}

impl<'a> Alternative<'a> {
    fn ret(&self) -> u32 {
        self.rule.ret
    }

    fn len(&self) -> usize {
        self.rule.conds.len()
    }

    /// Test `i` of the rule, with the merged bits where they stand.
    fn test(&self, i: usize) -> (u8, Test) {
        let (arg, test) = test_of(&self.rule.conds[i]);
        match self.bits {
            Some((at, bits)) if at == i => (arg, Test::AnySet(bits)),
            _ => (arg, test),
        }
    }
}

/// `rules` with the single-bit tests as `AnySet`, and each two neighbours that give the same
/// action and differ only in which bits one such test looks for merged into one: "the mode has
/// the setuid bit" and then "the mode has the setgid bit" is one test of either bit, and the
/// seven namespace flags of `clone` are one. The same verdicts, as the neighbours are
/// alternatives with one action (A and B, or A and C, is A and (B or C)); about a third of the
/// program's instructions fewer, which the kernel checks, translates and compiles at every
/// launch and runs at every filtered call. The alternatives are written to `out` (emptied
/// first), so that one list serves every call.
fn merged<'a>(rules: &'a [(u32, Rule)], out: &mut Vec<Alternative<'a>>) {
    out.clear();
    for (_, rule) in rules {
        let next = Alternative { rule, bits: None };
        let merged = out.last_mut().is_some_and(|last| merge_into(last, &next));
        if !merged {
            out.push(next);
        }
    }
}

/// Merges `next` into `last` when they give the same action and their tests are the same but
/// for one `AnySet` of the same argument on each side.
///
/// `last` holds merged bits at one test at most: once merged, that test looks for two bits or
/// more, which no single-bit `AnySet` of a rule equals, so a rule merged next differs there too.
fn merge_into(last: &mut Alternative, next: &Alternative) -> bool {
    if last.ret() != next.ret() || last.len() != next.len() {
        return false;
    }
    let mut differing = (0..last.len()).filter(|&i| last.test(i) != next.test(i));
    let Some(i) = differing.next() else {
        // The same tests twice: nothing to add.
        return true;
    };
    if differing.next().is_some() {
        // More than one difference: not mergeable.
        return false;
    }
    match (last.test(i), next.test(i)) {
        ((arg_a, Test::AnySet(a)), (arg_b, Test::AnySet(b))) if arg_a == arg_b => {
            debug_assert!(last.bits.is_none_or(|(at, _)| at == i));
            last.bits = Some((i, a | b));
            true
        }
        _ => false,
    }
}

/// The search over `calls` (sorted by number), with the number loaded. Every path through the
/// block ends at a return, so blocks are laid end to end without a jump past them.
/// `scratch` holds each call's alternatives in turn.
fn search<'a>(
    asm: &mut Asm,
    calls: &[(u32, &'a [(u32, Rule)])],
    scratch: &mut Vec<Alternative<'a>>,
) {
    if calls.len() <= 3 {
        if calls.is_empty() {
            // Only a filter without any call has an empty block (a split leaves two or more
            // on each side).
            asm.stmt(RET_K, ALLOW);
        }
        for (i, (nr, rules)) in calls.iter().enumerate() {
            // Another number goes on to the next call's test; after the last, it is allowed.
            let other = if i + 1 == calls.len() {
                To::Return(ALLOW)
            } else {
                To::Label(asm.label())
            };
            merged(rules, scratch);
            call(asm, *nr, scratch, other);
            if let To::Label(next_call) = other {
                asm.mark(next_call);
            }
        }
        return;
    }
    let mid = calls.len() / 2;
    let high = asm.label();
    asm.jump(JGE_K, calls[mid].0, To::Label(high), To::Next);
    search(asm, &calls[..mid], scratch);
    asm.mark(high);
    search(asm, &calls[mid..], scratch);
}

/// The test of number `nr` and its rules in order: the first rule whose tests all hold gives
/// its action, and a call no rule matches is allowed. The number is in the accumulator on entry,
/// and another number goes to `other` with it still there; the rules load the arguments they
/// test, so every path past the number's test ends at a return.
fn call(asm: &mut Asm, nr: u32, rules: &[Alternative], other: To) {
    let first = match rules.first() {
        // A call without rules is allowed (none comes here: a call is in the search for a rule).
        None => To::Return(ALLOW),
        // Refused whatever its arguments: the number's test goes straight to the action.
        Some(rule) if rule.len() == 0 => To::Return(rule.ret()),
        Some(_) => To::Next,
    };
    asm.jump(JEQ_K, nr, first, other);
    if first != To::Next {
        return;
    }
    for (i, rule) in rules.iter().enumerate() {
        if rule.len() == 0 {
            // Holds whatever the arguments: the rules after it are never reached.
            asm.stmt(RET_K, rule.ret());
            return;
        }
        // A failing test goes to the next rule, and in the last rule to the allow.
        let next_rule = if i + 1 == rules.len() {
            To::Return(ALLOW)
        } else {
            To::Label(asm.label())
        };
        for j in 0..rule.len() {
            let (arg, test) = rule.test(j);
            // A test that holds goes on to the next one, and the last to the rule's action.
            let holds = if j + 1 == rule.len() {
                To::Return(rule.ret())
            } else {
                To::Next
            };
            asm.stmt(LD_ABS, arg_low(arg));
            match test {
                Test::Eq(v) => asm.jump(JEQ_K, v, holds, next_rule),
                Test::Ne(v) => asm.jump(JEQ_K, v, next_rule, holds),
                Test::MaskedEq { mask, value } => {
                    asm.stmt(AND_K, mask);
                    asm.jump(JEQ_K, value, holds, next_rule);
                }
                Test::AnySet(mask) => asm.jump(JSET_K, mask, holds, next_rule),
            }
        }
        if let To::Label(label) = next_rule {
            asm.mark(label);
        }
    }
}

/// Where a jump goes, named while the program is written; [`Asm::assemble`] turns it into a
/// distance once every instruction has its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum To {
    /// The instruction after the jump.
    Next,
    /// The place [`Asm::mark`] gave this label.
    Label(usize),
    /// The return of this action in the pool at the end of the program.
    Return(u32),
}

/// An instruction as written: one that goes on to the next (a load, an AND) or returns, a
/// conditional jump to two named places, or a label's place (no instruction).
#[derive(Debug, Clone, Copy)]
enum Op {
    Plain { code: u16, k: u32 },
    Jump { code: u16, k: u32, yes: To, no: To },
    Mark(usize),
}

/// The program being written, with named places instead of distances.
///
/// Classic BPF jumps forward only, a conditional jump by at most 255 instructions (8 bits) and
/// `JA` by 32 bits. [`Asm::assemble`] lays the program out with one return per action at its
/// end (the pool) and resolves each jump's distance. A branch too far for its 8 bits gets an
/// instruction of its own right after the jump: the return itself for a pool's action, a `JA`
/// for a label. Such an instruction moves everything after it one place on, which can put
/// another branch out of reach, so the layout is redone until none is (branches only ever
/// become far, so this ends). Today's filters need none: their programs are shorter than 255.
#[derive(Debug, Default)]
struct Asm {
    ops: Vec<Op>,
    labels: usize,
}

/// A branch of a conditional jump: the jump's index in [`Asm::ops`], and `true` for the branch
/// taken when the test holds.
type Branch = (usize, bool);

impl Asm {
    fn stmt(&mut self, code: u16, k: u32) {
        self.ops.push(Op::Plain { code, k });
    }

    fn jump(&mut self, code: u16, k: u32, yes: To, no: To) {
        self.ops.push(Op::Jump { code, k, yes, no });
    }

    /// A new label, to be placed once with [`Asm::mark`] after the jumps to it.
    fn label(&mut self) -> usize {
        self.labels += 1;
        self.labels - 1
    }

    fn mark(&mut self, label: usize) {
        self.ops.push(Op::Mark(label));
    }

    /// The program: the instructions written, then the pool.
    fn assemble(&self) -> Vec<sock_filter> {
        let mut pool: Vec<u32> = Vec::new();
        for op in &self.ops {
            if let Op::Jump { yes, no, .. } = op {
                for to in [yes, no] {
                    if let To::Return(action) = to
                        && !pool.contains(action)
                    {
                        pool.push(*action);
                    }
                }
            }
        }
        let mut far: BTreeSet<Branch> = BTreeSet::new();
        loop {
            let layout = self.layout(&far, &pool);
            let mut grew = false;
            for (i, op) in self.ops.iter().enumerate() {
                if let Op::Jump { yes, no, .. } = *op {
                    for (branch, to) in [(true, yes), (false, no)] {
                        if !far.contains(&(i, branch)) && layout.distance(i, to) > 255 {
                            far.insert((i, branch));
                            grew = true;
                        }
                    }
                }
            }
            if !grew {
                return self.emit(&layout, &far);
            }
        }
    }

    /// Where each op and each label is, with the branches in `far` given their own instruction.
    fn layout<'p>(&self, far: &BTreeSet<Branch>, pool: &'p [u32]) -> Layout<'p> {
        let mut at = Vec::with_capacity(self.ops.len());
        let mut labels = vec![None; self.labels];
        let mut pc = 0;
        for (i, op) in self.ops.iter().enumerate() {
            at.push(pc);
            pc += match op {
                Op::Plain { .. } => 1,
                Op::Jump { .. } => {
                    1 + [true, false]
                        .iter()
                        .filter(|b| far.contains(&(i, **b)))
                        .count()
                }
                Op::Mark(label) => {
                    labels[*label] = Some(pc);
                    0
                }
            };
        }
        at.push(pc);
        Layout { at, labels, pool }
    }

    fn emit(&self, layout: &Layout, far: &BTreeSet<Branch>) -> Vec<sock_filter> {
        let mut out = Vec::with_capacity(layout.pool_start() + layout.pool.len());
        for (i, op) in self.ops.iter().enumerate() {
            match *op {
                Op::Plain { code, k } => out.push(stmt(code, k)),
                Op::Mark(_) => {}
                Op::Jump { code, k, yes, no } => {
                    // A far branch jumps to its own instruction after this one (the first
                    // far branch's at 0); a near one the whole distance.
                    let mut stubs = Vec::new();
                    let mut offset = |branch: bool, to: To| -> u8 {
                        let distance = if far.contains(&(i, branch)) {
                            let stub_at = layout.at[i] + 1 + stubs.len();
                            stubs.push(match to {
                                To::Return(action) => stmt(RET_K, action),
                                _ => stmt(JA, (layout.target(i, to) - (stub_at + 1)) as u32),
                            });
                            stubs.len() - 1
                        } else {
                            layout.distance(i, to)
                        };
                        u8::try_from(distance).expect("the layout left no branch out of reach")
                    };
                    let jt = offset(true, yes);
                    let jf = offset(false, no);
                    out.push(sock_filter { code, jt, jf, k });
                    out.extend(stubs);
                }
            }
        }
        out.extend(layout.pool.iter().map(|action| stmt(RET_K, *action)));
        out
    }
}

/// Where [`Asm::layout`] put each op: `at[i]` is op `i`'s first instruction (and `at[ops]` the
/// pool's start), `labels[l]` label `l`'s place.
struct Layout<'p> {
    at: Vec<usize>,
    labels: Vec<Option<usize>>,
    pool: &'p [u32],
}

impl Layout<'_> {
    fn pool_start(&self) -> usize {
        self.at[self.at.len() - 1]
    }

    /// The instruction branch `to` of op `i` goes to.
    fn target(&self, i: usize, to: To) -> usize {
        match to {
            To::Next => self.at[i + 1],
            To::Label(label) => self.labels[label].expect("every label is placed"),
            To::Return(action) => {
                let slot = self.pool.iter().position(|a| *a == action);
                self.pool_start() + slot.expect("every action of a jump is in the pool")
            }
        }
    }

    /// How far op `i`'s jump goes to reach `to`: the instructions it skips.
    fn distance(&self, i: usize, to: To) -> usize {
        self.target(i, to)
            .checked_sub(self.at[i] + 1)
            .expect("every jump goes forward")
    }
}

/// What the kernel would return for a call, running `program` (the subset of classic BPF the
/// programs here use); for the tests, which compare this program with `seccompiler`'s.
#[cfg(test)]
pub(super) fn run(program: &[sock_filter], data: &[u32; 16]) -> u32 {
    let mut acc: u32 = 0;
    let mut pc = 0usize;
    loop {
        let ins = &program[pc];
        pc += 1;
        let class = u32::from(ins.code) & 0x07;
        match class {
            c if c == libc::BPF_LD => {
                assert_eq!(
                    u32::from(ins.code),
                    libc::BPF_LD | libc::BPF_W | libc::BPF_ABS
                );
                acc = data[(ins.k / 4) as usize];
            }
            c if c == libc::BPF_ALU => {
                let op = u32::from(ins.code) & 0xf0;
                assert_eq!(u32::from(ins.code) & 0x08, libc::BPF_K, "an X operand");
                acc = match op {
                    o if o == libc::BPF_AND => acc & ins.k,
                    o if o == libc::BPF_OR => acc | ins.k,
                    o if o == libc::BPF_RSH => acc >> ins.k,
                    o if o == libc::BPF_LSH => acc << ins.k,
                    o => panic!("ALU op {o:#x}"),
                };
            }
            c if c == libc::BPF_JMP => {
                let op = u32::from(ins.code) & 0xf0;
                if op == libc::BPF_JA {
                    pc += ins.k as usize;
                    continue;
                }
                let taken = match op {
                    o if o == libc::BPF_JEQ => acc == ins.k,
                    o if o == libc::BPF_JGE => acc >= ins.k,
                    o if o == libc::BPF_JGT => acc > ins.k,
                    o if o == libc::BPF_JSET => acc & ins.k != 0,
                    o => panic!("JMP op {o:#x}"),
                };
                pc += usize::from(if taken { ins.jt } else { ins.jf });
            }
            c if c == libc::BPF_RET => return ins.k,
            c if c == libc::BPF_MISC => {
                // TAX / TXA: seccompiler keeps nothing in X that matters for these programs.
            }
            c => panic!("class {c:#x}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// What `filter` gives for a call, read straight from its rules: the reference the programs
    /// are checked against here (`seccomp.rs` checks today's filters against seccompiler's).
    fn verdict(filter: &Filter, data: &[u32; 16]) -> u32 {
        let nr = data[0];
        if data[1] != filter.arch {
            return libc::SECCOMP_RET_KILL_PROCESS;
        }
        if filter.refuse_x32 && (X32_SYSCALL_BIT..SIGN_BIT).contains(&nr) {
            return errno(libc::EPERM);
        }
        let holds = |cond: &Cond| {
            let word = data[4 + 2 * usize::from(cond.arg)];
            match cond.cmp {
                Cmp::Eq(v) => word == v,
                Cmp::Ne(v) => word != v,
                Cmp::MaskedEq { mask, value } => word & mask == value,
            }
        };
        filter
            .rules
            .iter()
            .filter(|(n, _)| *n == nr)
            .map(|(_, rule)| rule)
            .find(|rule| rule.conds.iter().all(holds))
            .map_or(ALLOW, |rule| rule.ret)
    }

    /// What the kernel checks of a program's shape before it loads it (`bpf_check_classic`):
    /// every jump lands inside the program, and the last instruction returns.
    fn assert_loadable(program: &[sock_filter]) {
        assert!((1..=MAX_INSTRUCTIONS).contains(&program.len()));
        for (pc, ins) in program.iter().enumerate() {
            let lands = |distance: usize| pc + 1 + distance < program.len();
            if ins.code == JA {
                assert!(lands(ins.k as usize), "JA at {pc} lands outside");
            } else if u32::from(ins.code) & 0x07 == libc::BPF_JMP {
                let (jt, jf) = (usize::from(ins.jt), usize::from(ins.jf));
                assert!(lands(jt) && lands(jf), "jump at {pc} lands outside");
            }
        }
        assert_eq!(program[program.len() - 1].code, RET_K);
    }

    /// The same numbers at every run (a linear congruential generator).
    struct Dice(u32);

    impl Dice {
        fn roll(&mut self, below: u32) -> u32 {
            self.0 = self.0.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (self.0 >> 16) % below
        }
    }

    /// The arguments the large filter tests (the first, a middle and the last one).
    const ARGS: [u8; 3] = [0, 2, 5];
    /// The call with one rule of 130 tests.
    const LONG_CALL: u32 = 100;

    /// A filter several times longer than the plans', so that jumps to the pool, across the
    /// search and to the next rule are too far for 8 bits: 70 calls with up to four rules of up
    /// to three tests each (of the arguments in [`ARGS`], with words below 8, single bits among
    /// them, and neighbours that differ only in a single bit, which are merged), each rule one
    /// of five actions (the allow among them); some calls refused whatever the arguments, some
    /// numbers between them without rules (not filtered); and [`LONG_CALL`], whose first rule
    /// has 130 tests of the first argument (every word from 100 to 229 but one makes one of them
    /// fail) before a second rule.
    fn large() -> Filter {
        let actions = [
            errno(libc::EPERM),
            errno(libc::ENOSYS),
            errno(libc::EACCES),
            ALLOW,
            libc::SECCOMP_RET_TRAP,
        ];
        let mut dice = Dice(14);
        let mut calls = BTreeMap::new();
        for nr in (0..210).step_by(3) {
            let mut rules: Vec<Rule> = Vec::new();
            match dice.roll(8) {
                0 => rules.push(Rule {
                    conds: Vec::new(),
                    ret: actions[dice.roll(5) as usize],
                }),
                1 => {}
                _ => {
                    for _ in 0..=dice.roll(4) {
                        let conds = (0..=dice.roll(3))
                            .map(|_| {
                                let arg = ARGS[dice.roll(3) as usize];
                                let cmp = match dice.roll(4) {
                                    0 => Cmp::Eq(dice.roll(8)),
                                    1 => Cmp::Ne(dice.roll(8)),
                                    2 => {
                                        let mask = dice.roll(7) + 1;
                                        Cmp::MaskedEq {
                                            mask,
                                            value: dice.roll(8) & mask,
                                        }
                                    }
                                    _ => {
                                        let bit = 1 << dice.roll(3);
                                        Cmp::MaskedEq {
                                            mask: bit,
                                            value: bit,
                                        }
                                    }
                                };
                                Cond { arg, cmp }
                            })
                            .collect();
                        let rule = Rule {
                            conds,
                            ret: actions[dice.roll(5) as usize],
                        };
                        // Now and then the same rule for another bit, which `merged` joins.
                        let other_bit = rule.conds.iter().position(|c| {
                            matches!(c.cmp, Cmp::MaskedEq { mask, value }
                                if mask == value && mask.is_power_of_two())
                        });
                        let twin = other_bit.filter(|_| dice.roll(2) == 0).map(|i| {
                            let mut twin = rule.clone();
                            let bit = 1 << dice.roll(3);
                            twin.conds[i].cmp = Cmp::MaskedEq {
                                mask: bit,
                                value: bit,
                            };
                            twin
                        });
                        rules.push(rule);
                        rules.extend(twin);
                    }
                }
            }
            calls.insert(nr, rules);
        }
        calls.insert(
            LONG_CALL,
            vec![
                Rule {
                    conds: (100..230)
                        .map(|v| Cond {
                            arg: 0,
                            cmp: Cmp::Ne(v),
                        })
                        .collect(),
                    ret: errno(libc::EPERM),
                },
                Rule {
                    conds: vec![Cond {
                        arg: 2,
                        cmp: Cmp::Eq(3),
                    }],
                    ret: errno(libc::ENOSYS),
                },
            ],
        );
        Filter {
            arch: AUDIT_ARCH_X86_64,
            refuse_x32: true,
            rules: calls
                .into_iter()
                .flat_map(|(nr, rules)| rules.into_iter().map(move |rule| (nr, rule)))
                .collect(),
        }
    }

    /// Every number from 0 to past the last call, some of the x32 range and above, with every
    /// combination of the words 0 to 7 in the arguments tested (and, for [`LONG_CALL`], the
    /// words its long rule tests in the first), and a call of another architecture.
    fn cases(filter: &Filter) -> Vec<[u32; 16]> {
        let last = filter.rules.last().map_or(0, |(nr, _)| *nr);
        let mut numbers: Vec<u32> = (0..=last + 3).collect();
        numbers.extend([0x4000_0000, 0x4000_0064, 0x7fff_ffff, 0x8000_0000, u32::MAX]);
        let mut out = Vec::new();
        for nr in numbers {
            let mut first: Vec<u32> = (0..8).collect();
            if nr == LONG_CALL {
                first.extend(98..232);
            }
            for a in &first {
                for b in 0..8 {
                    for c in 0..8 {
                        let mut data = [0u32; 16];
                        data[0] = nr;
                        data[1] = filter.arch;
                        for (arg, word) in ARGS.iter().zip([*a, b, c]) {
                            data[4 + 2 * usize::from(*arg)] = word;
                        }
                        out.push(data);
                    }
                }
            }
        }
        let mut other = [0u32; 16];
        other[1] = 0x4000_0003; // AUDIT_ARCH_I386
        out.push(other);
        out
    }

    fn assert_same_verdicts(filter: &Filter, program: &[sock_filter]) {
        assert_loadable(program);
        for data in cases(filter) {
            assert_eq!(
                run(program, &data),
                verdict(filter, &data),
                "call {} arguments {:?}",
                data[0],
                [data[4], data[8], data[14]]
            );
        }
    }

    #[test]
    fn a_filter_too_long_for_8_bit_jumps_gives_the_verdicts_of_its_rules() {
        let filter = large();
        let program = filter.compile().unwrap();
        // The fallbacks are there: returns of their own (more than the pool's one per action)
        // and `JA` for labels out of reach.
        let returns = program.iter().filter(|i| i.code == RET_K).count();
        let long_jumps = program.iter().filter(|i| i.code == JA).count();
        assert!(program.len() > 3 * 255, "{} instructions", program.len());
        assert!(returns > 6, "{returns} returns");
        assert!(long_jumps > 0, "no JA");
        assert_same_verdicts(&filter, &program);
    }

    #[test]
    fn a_short_filter_has_one_return_per_action_and_gives_the_verdicts_of_its_rules() {
        let mut filter = large();
        filter.rules.retain(|(nr, _)| *nr < 40);
        let program = filter.compile().unwrap();
        assert!(program.len() < 255, "{} instructions", program.len());
        let mut returns: Vec<u32> = program
            .iter()
            .filter(|i| i.code == RET_K)
            .map(|i| i.k)
            .collect();
        let all = returns.len();
        returns.sort_unstable();
        returns.dedup();
        assert_eq!(returns.len(), all, "two returns of one action");
        assert!(program.iter().all(|i| i.code != JA));
        assert_same_verdicts(&filter, &program);
    }

    #[test]
    fn a_filter_whose_rules_are_not_sorted_by_number_is_refused() {
        let mut filter = large();
        assert!(filter.compile().is_ok());
        let last = filter.rules.len() - 1;
        filter.rules.swap(0, last);
        let err = filter.compile().unwrap_err();
        assert!(err.contains("not sorted"), "{err}");
    }

    #[test]
    fn a_filter_without_calls_allows_every_call_of_its_architecture() {
        for refuse_x32 in [false, true] {
            let filter = Filter {
                arch: AUDIT_ARCH_X86_64,
                refuse_x32,
                rules: Vec::new(),
            };
            let program = filter.compile().unwrap();
            assert_same_verdicts(&filter, &program);
        }
    }
}
