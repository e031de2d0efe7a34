//! Criterion benchmarks of the work done before anything runs, at the sizes BENCHMARKS.md reports:
//! `Policy::build` (through `Context::policy`, on the real disk), the Seatbelt profile and the
//! Linux plan compile, with 10 to 10,000 workflows, 100 to 10,000 chats and 1 to 1,000 grants;
//! the seccomp program the Linux plan carries, on its own; and the namespace decision (the trial
//! and the kept answer).
//!
//! Run: `cargo bench -p launch --bench compile` (about a minute and a half on 2 cores). The
//! launch itself, the real CLIs and memory are measured by the `launch` bench (the table).
//!
//! Linux only, as criterion is a dev-dependency on Linux only: it compiles C for its target (a
//! stack-shifting helper), which `cargo check --target aarch64-apple-darwin` cannot do without a
//! Mac's C compiler, and the workspace type-checks for macOS in CI.

#[cfg(target_os = "linux")]
mod common;

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("the criterion benchmarks run on Linux only");
}

#[cfg(target_os = "linux")]
criterion::criterion_main!(linux::benches);

#[cfg(target_os = "linux")]
mod linux {
    use std::hint::black_box;
    use std::time::Duration;

    use criterion::{BenchmarkId, Criterion, criterion_group};
    use launch::seatbelt::SeatbeltProfile;
    use sandbox_core::{GrantRequest, Os, Policy, PolicyRequest, Resolver};

    use crate::common::{Layouts, SIZES, scratch_dir};

    fn compile(c: &mut Criterion) {
        let layouts = Layouts::create(&scratch_dir(), &SIZES).expect("build the bench layouts");
        let kernel = sandbox_linux::this_kernel();

        let mut group = c.benchmark_group("policy_build");
        for size in &SIZES {
            let layout = layouts.for_size(size);
            let ctx = layout.context(Os::Linux);
            let grants = layout.grant_requests(size.grants);
            group.bench_with_input(BenchmarkId::from_parameter(size.name), &grants, |b, g| {
                b.iter(|| ctx.policy(&layout.demo.chat, black_box(g)).unwrap())
            });
        }
        group.finish();

        let mut group = c.benchmark_group("seatbelt_profile");
        for size in &SIZES {
            let policy = layouts.for_size(size).policy(Os::MacOs, size.grants);
            group.bench_with_input(BenchmarkId::from_parameter(size.name), &policy, |b, p| {
                b.iter(|| SeatbeltProfile::for_policy(black_box(p)).unwrap())
            });
        }
        group.finish();

        // The size the issue measured: 1,000 grants with 190-character paths (the bench layout's
        // grant folders with their names lengthened, built by `Policy::build` on a resolver that
        // takes every path as a canonical folder: the profile only reads them). The profile, and
        // the full command with its ARG_MAX check, which `wrap` adds before anything runs.
        let mut group = c.benchmark_group("seatbelt_1000_grants_190_chars");
        let thousand = SIZES
            .iter()
            .find(|s| s.name == "1,000 grants")
            .expect("a size of 1,000 grants");
        let layout = layouts.for_size(thousand);
        let short = layout.policy(Os::MacOs, thousand.grants);
        let lengthened: Vec<GrantRequest> = short
            .grants()
            .iter()
            .map(|grant| {
                let pad = 190usize.saturating_sub(grant.path.as_os_str().len() + 1);
                GrantRequest {
                    path: format!("{}-{}", grant.path.display(), "x".repeat(pad)).into(),
                    access: grant.access,
                }
            })
            .collect();
        let ctx = layout.context(Os::MacOs);
        let long = Policy::build(
            &PolicyRequest {
                os: Os::MacOs,
                layout: &ctx.layout,
                chat: short.chat(),
                grants: &lengthened,
                config: &ctx.config,
                privileged: false,
                settings: &[],
            },
            &AsIs,
        )
        .expect("the lengthened policy builds");
        group.bench_function("profile", |b| {
            b.iter(|| SeatbeltProfile::for_policy(black_box(&long)).unwrap())
        });
        let profile = SeatbeltProfile::for_policy(&long).unwrap();
        group.bench_function("wrap and size check", |b| {
            b.iter(|| {
                let argv = black_box(&profile).wrap(&["/bin/true".into()]);
                SeatbeltProfile::check_exec_size(&argv, [], long.grants().len()).unwrap();
                argv
            })
        });
        group.finish();

        // The seccomp program alone, part of each plan's compile: the namespaced plan's filter
        // below Landlock ABI 9 (137 instructions on x86_64) and the Landlock-only plan's (165).
        let mut group = c.benchmark_group("seccomp_program");
        let policy = layouts
            .for_size(&SIZES[0])
            .policy(Os::Linux, SIZES[0].grants);
        let below_abi_9 = sandbox_linux::plan::Kernel {
            landlock_abi: kernel.landlock_abi.min(8),
            ..kernel
        };
        for (name, namespaces) in [("namespaced", true), ("landlock only", false)] {
            let kernel = sandbox_linux::plan::Kernel {
                namespaces,
                ..below_abi_9
            };
            let seccomp = sandbox_linux::compile(&policy, kernel).unwrap().seccomp;
            group.bench_with_input(BenchmarkId::from_parameter(name), &seccomp, |b, s| {
                b.iter(|| sandbox_linux::plan::seccomp_program(black_box(s)).unwrap())
            });
        }
        group.finish();

        let mut group = c.benchmark_group("linux_plan_compile");
        for size in &SIZES {
            let policy = layouts.for_size(size).policy(Os::Linux, size.grants);
            group.bench_with_input(BenchmarkId::from_parameter(size.name), &policy, |b, p| {
                b.iter(|| sandbox_linux::compile(black_box(p), kernel).unwrap())
            });
        }
        group.finish();
    }

    /// The decision of the plan (`launch::probe`): the namespace trial each process
    /// makes once, against the answer kept afterwards (three sysctl reads), side by side.
    fn decision(c: &mut Criterion) {
        let mut group = c.benchmark_group("namespace_decision");
        group.bench_function("trial (first launch of a process)", |b| {
            b.iter(|| black_box(sandbox_linux::trial::namespaces_afresh().is_ok()))
        });
        group.bench_function("kept (later launches)", |b| {
            b.iter(|| black_box(sandbox_linux::namespaces().is_ok()))
        });
        group.finish();
    }

    criterion_group! {
        name = benches;
        // Short windows: 21 benchmarks fit in about a minute, and the spread criterion reports
        // says when that was too short.
        config = Criterion::default()
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2))
            .sample_size(30);
        targets = compile, decision
    }

    /// Takes every path as an existing canonical folder: the lengthened grants exist nowhere.
    struct AsIs;

    impl Resolver for AsIs {
        fn canonicalize(&self, path: &std::path::Path) -> std::io::Result<std::path::PathBuf> {
            Ok(path.to_owned())
        }

        fn is_dir(&self, _: &std::path::Path) -> bool {
            true
        }
    }
}
