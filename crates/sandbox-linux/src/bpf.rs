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
//! (`JSET` of their bits): 239 instructions instead of 335 for the same verdicts.
//! Arguments are compared as their low 32-bit words, as `seccomp.rs` explains.

use std::collections::BTreeMap;

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
/// filtered call's rules in order.
#[derive(Debug, Clone, Default)]
pub(super) struct Filter {
    pub arch: u32,
    pub refuse_x32: bool,
    pub calls: BTreeMap<u32, Vec<Rule>>,
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

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

/// A distance for a conditional jump, which holds 8 bits; the blocks here are built so that it
/// fits (a long one goes through `JA`), and a rule too long for it is refused.
fn short(distance: usize) -> Result<u8, String> {
    u8::try_from(distance).map_err(|_| format!("a seccomp rule is {distance} instructions long"))
}

impl Filter {
    /// The program, ready for `seccompiler::apply_filter`.
    pub fn compile(&self) -> Result<Vec<sock_filter>, String> {
        let mut out = vec![
            stmt(LD_ABS, ARCH),
            // Another architecture (an i386 `int 0x80` on x86_64): end the process.
            jump(JEQ_K, self.arch, 1, 0),
            stmt(RET_K, libc::SECCOMP_RET_KILL_PROCESS),
            stmt(LD_ABS, NR),
        ];
        if self.refuse_x32 {
            // At or above the sign bit the number is no x32 call (the kernel refuses negative
            // ones): go on to the search.
            out.push(jump(JGE_K, SIGN_BIT, 2, 0));
            out.push(jump(JGE_K, X32_SYSCALL_BIT, 0, 1));
            out.push(stmt(RET_K, errno(libc::EPERM)));
        }
        let calls: Vec<(u32, Vec<Alternative>)> = self
            .calls
            .iter()
            .map(|(n, rules)| (*n, merged(rules)))
            .collect();
        out.extend(search(&calls)?);
        Ok(out)
    }
}

/// A rule as the program tests it: [`Rule`]'s conditions, where a test of single bits may stand
/// for several rules (see [`merged`]).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Alternative {
    tests: Vec<(u8, Test)>,
    ret: u32,
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

/// `rules` with the single-bit tests as `AnySet`, and each two neighbours that give the same
/// action and differ only in which bits one such test looks for merged into one: "the mode has
/// the setuid bit" and then "the mode has the setgid bit" is one test of either bit, and the
/// seven namespace flags of `clone` are one. The same verdicts, as the neighbours are
/// alternatives with one action (A and B, or A and C, is A and (B or C)); about a third of the
/// program's instructions fewer, which the kernel checks, translates and compiles at every
/// launch and runs at every filtered call.
fn merged(rules: &[Rule]) -> Vec<Alternative> {
    let mut out: Vec<Alternative> = Vec::new();
    for rule in rules {
        let next = Alternative {
            tests: rule
                .conds
                .iter()
                .map(|c| {
                    let test = match c.cmp {
                        Cmp::Eq(v) => Test::Eq(v),
                        Cmp::Ne(v) => Test::Ne(v),
                        Cmp::MaskedEq { mask, value }
                            if mask == value && mask.is_power_of_two() =>
                        {
                            Test::AnySet(mask)
                        }
                        Cmp::MaskedEq { mask, value } => Test::MaskedEq { mask, value },
                    };
                    (c.arg, test)
                })
                .collect(),
            ret: rule.ret,
        };
        let merged = out.last_mut().is_some_and(|last| merge_into(last, &next));
        if !merged {
            out.push(next);
        }
    }
    out
}

/// Merges `next` into `last` when they give the same action and their tests are the same but
/// for one `AnySet` of the same argument on each side.
fn merge_into(last: &mut Alternative, next: &Alternative) -> bool {
    if last.ret != next.ret || last.tests.len() != next.tests.len() {
        return false;
    }
    let differing: Vec<usize> = (0..last.tests.len())
        .filter(|&i| last.tests[i] != next.tests[i])
        .collect();
    let [i] = differing[..] else {
        // The same tests twice (nothing to add), or more than one difference (not mergeable).
        return differing.is_empty();
    };
    match (last.tests[i], next.tests[i]) {
        ((arg_a, Test::AnySet(a)), (arg_b, Test::AnySet(b))) if arg_a == arg_b => {
            last.tests[i] = (arg_a, Test::AnySet(a | b));
            true
        }
        _ => false,
    }
}

/// The search over `calls` (sorted by number), with the number loaded. Every path of the block
/// returns, so blocks are laid end to end without a jump past them.
fn search(calls: &[(u32, Vec<Alternative>)]) -> Result<Vec<sock_filter>, String> {
    if calls.len() <= 3 {
        let mut out = Vec::new();
        for (nr, rules) in calls {
            let body = rules_of(rules)?;
            out.push(jump(JEQ_K, *nr, 0, short(body.len())?));
            out.extend(body);
        }
        out.push(stmt(RET_K, ALLOW));
        return Ok(out);
    }
    let mid = calls.len() / 2;
    let low = search(&calls[..mid])?;
    let high = search(&calls[mid..])?;
    let mut out = Vec::with_capacity(low.len() + high.len() + 2);
    match u8::try_from(low.len()) {
        Ok(over_low) => out.push(jump(JGE_K, calls[mid].0, over_low, 0)),
        Err(_) => {
            // Too far for a conditional jump: the true branch goes through `JA` (32 bits).
            out.push(jump(JGE_K, calls[mid].0, 0, 1));
            out.push(stmt(JA, low.len() as u32));
        }
    }
    out.extend(low);
    out.extend(high);
    Ok(out)
}

/// One call's rules in order, then allow. The number is in the accumulator on entry; a rule
/// loads the arguments it tests.
fn rules_of(rules: &[Alternative]) -> Result<Vec<sock_filter>, String> {
    let mut out = Vec::new();
    for rule in rules {
        // Each failing condition jumps to the next rule, past the rest of this one: built
        // backwards from the return, so that every distance is known.
        let mut code = vec![stmt(RET_K, rule.ret)];
        for (arg, cmp) in rule.tests.iter().rev() {
            let to_next_rule = short(code.len())?;
            let mut test = vec![stmt(LD_ABS, arg_low(*arg))];
            match *cmp {
                Test::Eq(v) => test.push(jump(JEQ_K, v, 0, to_next_rule)),
                Test::Ne(v) => test.push(jump(JEQ_K, v, to_next_rule, 0)),
                Test::MaskedEq { mask, value } => {
                    test.push(stmt(AND_K, mask));
                    test.push(jump(JEQ_K, value, 0, to_next_rule));
                }
                Test::AnySet(mask) => test.push(jump(JSET_K, mask, 0, to_next_rule)),
            }
            test.extend(code);
            code = test;
        }
        out.extend(code);
        // The next rule (or the allow) tests the number no more, but later rules load their
        // own arguments; nothing else reads the accumulator.
    }
    out.push(stmt(RET_K, ALLOW));
    Ok(out)
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
