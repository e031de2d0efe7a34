//! Criterion benchmarks of the work done before anything runs, at the sizes of issue 7:
//! `Policy::build` (through `Context::policy`, on the real disk), the Seatbelt profile and the
//! Linux plan compile, with 10 to 10,000 workflows, 100 to 10,000 chats and 1 to 1,000 grants.
//!
//! Run: `cargo bench -p launch --bench compile` (about a minute and a half on 2 cores). The
//! launch itself, the real CLIs and memory are measured by the `launch` bench (the table).

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use launch::seatbelt::SeatbeltProfile;
use sandbox_core::Os;

mod common;
use common::{Layouts, SIZES, scratch_dir};

fn compile(c: &mut Criterion) {
    let layouts = Layouts::create(&scratch_dir(), &SIZES).expect("build the bench layouts");
    let kernel = launch::linux::this_kernel();

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

    let mut group = c.benchmark_group("linux_plan_compile");
    for size in &SIZES {
        let policy = layouts.for_size(size).policy(Os::Linux, size.grants);
        group.bench_with_input(BenchmarkId::from_parameter(size.name), &policy, |b, p| {
            b.iter(|| launch::linux::compile(black_box(p), kernel).unwrap())
        });
    }
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
    targets = compile
}
criterion_main!(benches);
