//! The table behind BENCHMARKS.md: what a confined launch costs, measured side by side in one run.
//!
//! Every launch variant runs once per round, in a new random order each round, so that the
//! drift of a shared machine falls on all of them alike; ratios and added milliseconds come
//! from the same rounds (the added time is the median of the per-round differences). Sections:
//!
//! 1. launch overhead: bare `/bin/true`, `cli-sandbox exec` of it with a plan compiled once,
//!    `cli-sandbox step` end to end, and `bwrap --ro-bind / / --dev /dev /bin/true`;
//! 2. the same launches with 10 to 10,000 workflows, 100 to 10,000 chats, 1 to 1,000 grants;
//! 3. policy build, Seatbelt profile and Linux plan compile at those sizes, in process, with
//!    the profile's size;
//! 4. the start of the real CLIs (`claude --version`, `codex --version`) bare and confined;
//! 5. the memory of the `exec` helper (and of the init it leaves in the chat's PID namespace).
//!
//! 7. `pre-trust` and `run` of Codex and `pre-trust` of Claude (with `/bin/true` as the CLI's
//!    program) with 10 and 10,000 past chats (`--only past`): their runtimes gone (an older
//!    launcher's entries, which the first pre-trust prunes, timed once) and still there (the
//!    files as this version and the CLIs leave them for chats never ended).
//!
//! 6. where the time of one launch goes, from the `PHASE` marks of a build with the
//!    `phase-times` feature (`--phases NAME=BIN`, one table column pair per build).
//!
//! Run: `scripts/bench.sh`, or `cargo bench -p cli-sandbox --bench launch -- [OPTIONS]` with
//! `--rounds N` (launch rounds, default 200), `--cli-rounds N` (default 40), `--quick`
//! (40 and 8), `--baseline [NAME=]PATH` (another `cli-sandbox` binary, measured in the same
//! rounds: before/after a change; repeatable), `--phases NAME=BIN` (a `phase-times` build;
//! repeatable), `--keep` (leave the layouts and plans on disk, to profile a launch by hand),
//! `--only launch,compile,cli,memory,phases` (some sections). Linux only: the helper is
//! Linux's.

// The layouts at scale, shared with the compile benchmarks of `launch`.
#[path = "../../launch/benches/common/mod.rs"]
mod common;

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("the launch table measures the Linux helper (`cli-sandbox exec`): run it on Linux");
}

#[cfg(target_os = "linux")]
fn main() {
    table::main();
}

#[cfg(target_os = "linux")]
mod table {
    use std::ffi::OsString;
    use std::io::Write;
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use launch::seatbelt::SeatbeltProfile;
    use sandbox_core::Os;
    use sandbox_linux::plan::LinuxPlan;

    use crate::common::{Layouts, SIZES, ScaledLayout, Size, scratch_dir};

    const BWRAP: &str = "/usr/bin/bwrap";
    const UNSHARE: &str = "/usr/bin/unshare";
    const TRUE: &str = "/bin/true";

    struct Options {
        rounds: usize,
        cli_rounds: usize,
        /// Other binaries timed in the same rounds, by name.
        baselines: Vec<(String, PathBuf)>,
        /// `phase-times` builds whose marks make the table of where the time goes, by name.
        phases: Vec<(String, PathBuf)>,
        binary: Option<PathBuf>,
        keep: bool,
        /// Sections to run (`launch`, `compile`, `cli`, `memory`); all when empty.
        only: Vec<String>,
    }

    impl Options {
        fn runs(&self, section: &str) -> bool {
            self.only.is_empty() || self.only.iter().any(|s| s == section)
        }
    }

    fn options() -> Options {
        let mut opts = Options {
            rounds: 200,
            cli_rounds: 40,
            baselines: Vec::new(),
            phases: Vec::new(),
            binary: None,
            keep: false,
            only: Vec::new(),
        };
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            let mut number = |what: &str| -> usize {
                args.next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("{what} needs a number"))
            };
            match arg.as_str() {
                "--rounds" => opts.rounds = number("--rounds").max(5),
                "--cli-rounds" => opts.cli_rounds = number("--cli-rounds").max(3),
                "--quick" => {
                    opts.rounds = 40;
                    opts.cli_rounds = 8;
                }
                "--baseline" => {
                    let value = args.next().expect("--baseline needs [NAME=]PATH");
                    opts.baselines.push(named("--baseline", &value, "baseline"));
                }
                "--phases" => {
                    let value = args.next().expect("--phases needs NAME=PATH");
                    opts.phases.push(named("--phases", &value, "this build"));
                }
                "--binary" => {
                    let path = PathBuf::from(args.next().expect("--binary needs a path"));
                    assert!(path.exists(), "--binary {} does not exist", path.display());
                    opts.binary = Some(path);
                }
                "--keep" => opts.keep = true,
                "--only" => {
                    let list = args.next().expect("--only needs launch,compile,cli,memory");
                    opts.only = list.split(',').map(str::to_owned).collect();
                }
                // `cargo bench` passes `--bench`; filters are not supported.
                _ => {}
            }
        }
        opts
    }

    /// `NAME=PATH` or `PATH` (named `default`); the path must exist.
    fn named(option: &str, value: &str, default: &str) -> (String, PathBuf) {
        let (name, path) = match value.split_once('=') {
            Some((name, path)) if !name.contains('/') => (name.to_owned(), PathBuf::from(path)),
            _ => (default.to_owned(), PathBuf::from(value)),
        };
        assert!(path.exists(), "{option} {} does not exist", path.display());
        (name, path)
    }

    /// One command to time, with the home it runs under.
    #[derive(Clone)]
    struct Variant {
        label: String,
        argv: Vec<OsString>,
        home: PathBuf,
    }

    impl Variant {
        fn new(label: impl Into<String>, argv: Vec<OsString>, home: &Path) -> Variant {
            Variant {
                label: label.into(),
                argv,
                home: home.to_owned(),
            }
        }

        fn command(&self) -> Command {
            let mut cmd = Command::new(&self.argv[0]);
            cmd.args(&self.argv[1..])
                .env("HOME", &self.home)
                .env_remove("XDG_DATA_HOME")
                .env_remove("AGENTWORKS_STATE_ROOT")
                .env_remove("AGENTWORKS_WORKSPACE_DOCS")
                .env_remove("RUST_LOG")
                .stdin(Stdio::null());
            cmd
        }

        /// Runs once with the output kept: a variant that fails is not timed.
        fn check(&self) -> Result<(), String> {
            let out = self
                .command()
                .output()
                .map_err(|e| format!("{}: cannot start: {e}", self.label))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "{}: {} ({})",
                    self.label,
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        }

        /// Wall time from spawn to reaped.
        fn run(&self) -> Duration {
            let mut cmd = self.command();
            // stderr into a file (opened before the clock starts): a launch that fails in the
            // middle of the rounds says why.
            let said = tempfile::tempfile().expect("a file for the launch's stderr");
            let stderr = said.try_clone().expect("the stderr file again");
            cmd.stdout(Stdio::null()).stderr(stderr);
            let start = Instant::now();
            let status = cmd
                .spawn()
                .and_then(|mut child| child.wait())
                .expect("run a checked variant");
            let elapsed = start.elapsed();
            if !status.success() {
                let mut text = String::new();
                let mut said = said;
                let _ = std::io::Seek::rewind(&mut said);
                let _ = std::io::Read::read_to_string(&mut said, &mut text);
                panic!(
                    "{} failed during the run ({status}): {}",
                    self.label,
                    text.trim()
                );
            }
            elapsed
        }
    }

    /// Milliseconds per round, one column per variant.
    struct Samples {
        labels: Vec<String>,
        ms: Vec<Vec<f64>>,
    }

    impl Samples {
        fn index(&self, label: &str) -> usize {
            self.labels
                .iter()
                .position(|l| l == label)
                .unwrap_or_else(|| panic!("no variant `{label}`"))
        }

        fn of(&self, label: &str) -> Stats {
            Stats::of(&self.ms[self.index(label)])
        }

        /// The per-round differences `label - reference`.
        fn diff(&self, label: &str, reference: &str) -> Stats {
            let (a, b) = (&self.ms[self.index(label)], &self.ms[self.index(reference)]);
            Stats::of(&a.iter().zip(b).map(|(x, y)| x - y).collect::<Vec<_>>())
        }
    }

    /// A small fixed-seed generator for the order of each round (xorshift64*): reproducible,
    /// and no dependency for it.
    struct Shuffle(u64);

    impl Shuffle {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        /// A fresh permutation of `0..n` (Fisher-Yates).
        fn order(&mut self, n: usize) -> Vec<usize> {
            let mut order: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                order.swap(i, (self.next() % (i as u64 + 1)) as usize);
            }
            order
        }
    }

    /// Runs every variant once per round, in a new random order each round: a launch leaves
    /// work behind (namespaces freed in the background), so a fixed order would charge it to
    /// whichever variant always comes next. A few rounds first warm the caches and are dropped.
    fn measure(what: &str, variants: &[Variant], rounds: usize) -> Samples {
        let mut ok = Vec::new();
        for v in variants {
            match v.check() {
                Ok(()) => ok.push(v.clone()),
                Err(e) => eprintln!("!!! not timed: {e}"),
            }
        }
        let warmup = (rounds / 10).clamp(2, 10);
        let n = ok.len();
        let mut ms = vec![Vec::with_capacity(rounds); n];
        eprint!("{what}: {n} variants x {rounds} rounds ");
        let started = Instant::now();
        let mut shuffle = Shuffle(0x9E37_79B9_7F4A_7C15);
        for round in 0..warmup + rounds {
            for i in shuffle.order(n) {
                let t = ok[i].run();
                if round >= warmup {
                    ms[i].push(t.as_secs_f64() * 1e3);
                }
            }
            if round % 20 == 0 {
                eprint!(".");
            }
        }
        eprintln!(" {:.1} s", started.elapsed().as_secs_f64());
        Samples {
            labels: ok.into_iter().map(|v| v.label).collect(),
            ms,
        }
    }

    #[derive(Debug, Clone, Copy)]
    struct Stats {
        median: f64,
        p10: f64,
        p25: f64,
        p75: f64,
        p90: f64,
    }

    impl Stats {
        fn of(values: &[f64]) -> Stats {
            let mut v = values.to_vec();
            v.sort_by(|a, b| a.total_cmp(b));
            let at = |p: f64| {
                if v.is_empty() {
                    return f64::NAN;
                }
                let rank = p * (v.len() - 1) as f64;
                let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
                v[lo] + (v[hi] - v[lo]) * (rank - lo as f64)
            };
            Stats {
                median: at(0.5),
                p10: at(0.1),
                p25: at(0.25),
                p75: at(0.75),
                p90: at(0.9),
            }
        }
    }

    /// Times an in-process step: the median of up to 30 runs, within about two seconds.
    fn time_in_process<T>(mut f: impl FnMut() -> T) -> Stats {
        let mut ms = Vec::new();
        let started = Instant::now();
        while ms.len() < 30 && (ms.len() < 3 || started.elapsed() < Duration::from_secs(2)) {
            let t = Instant::now();
            std::hint::black_box(f());
            ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        Stats::of(&ms)
    }

    fn os(s: impl Into<OsString>) -> OsString {
        s.into()
    }

    /// `HELPER exec --policy PLAN -- argv`, with the helper a launch of `bin` runs: the
    /// `cli-sandbox-helper` beside it (`launch::wrap::helper_binary`), or `bin` itself for a build
    /// that has none (a baseline older than the helper alone).
    fn exec_argv(bin: &Path, plan: &Path, argv: &[OsString]) -> Vec<OsString> {
        let beside = bin.with_file_name(launch::wrap::HELPER_NAME);
        let helper = if beside.is_file() { &beside } else { bin };
        full_exec_argv(helper, plan, argv)
    }

    /// `cli-sandbox exec --policy PLAN -- argv`: the helper inside the full binary.
    fn full_exec_argv(bin: &Path, plan: &Path, argv: &[OsString]) -> Vec<OsString> {
        let mut out = vec![os(bin), os("exec"), os("--policy"), os(plan), os("--")];
        out.extend(argv.iter().cloned());
        out
    }

    /// `cli-sandbox --config CONFIG step --chat CHAT --grant ... -- argv`.
    fn step_argv(
        bin: &Path,
        layout: &ScaledLayout,
        grants: usize,
        argv: &[OsString],
    ) -> Vec<OsString> {
        let mut out = vec![
            os(bin),
            os("--config"),
            os(&layout.demo.config),
            os("step"),
            os("--chat"),
            os(&layout.demo.chat),
        ];
        for g in layout.grant_args(grants) {
            out.push(os("--grant"));
            out.push(os(g));
        }
        out.push(os("--"));
        out.extend(argv.iter().cloned());
        out
    }

    /// bubblewrap with the namespaces our helper makes (user, mount, PID) and a fresh `/proc`.
    fn bwrap_ns_argv(argv: &[OsString]) -> Vec<OsString> {
        let mut out: Vec<OsString> = [
            BWRAP,
            "--unshare-user",
            "--unshare-pid",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
        ]
        .into_iter()
        .map(os)
        .collect();
        out.extend(argv.iter().cloned());
        out
    }

    fn bwrap_argv(argv: &[OsString]) -> Vec<OsString> {
        let mut out: Vec<OsString> = [BWRAP, "--ro-bind", "/", "/", "--dev", "/dev"]
            .into_iter()
            .map(os)
            .collect();
        out.extend(argv.iter().cloned());
        out
    }

    /// Compiles the size's plan once, as `cli-sandbox run` would, into the bench folder.
    fn write_plan(layouts: &Layouts, size: &Size) -> (PathBuf, LinuxPlan) {
        let layout = layouts.for_size(size);
        let ctx = layout.context(Os::Linux);
        let policy = layout.policy(Os::Linux, size.grants);
        ctx.ensure_runtime(&policy).expect("create the runtime");
        let plan = sandbox_linux::compile(&policy, sandbox_linux::this_kernel())
            .expect("compile the bench plan");
        let path = layouts
            .root()
            .join(format!("plan-{}.json", size.name.replace([',', ' '], "")));
        std::fs::write(&path, serde_json::to_vec(&plan).expect("serialize")).unwrap();
        (path, plan)
    }

    /// The base plan with `network = "isolated"`, when this machine can build it (pasta).
    fn isolated_plan(layouts: &Layouts, size: &Size) -> Option<PathBuf> {
        let layout = layouts.for_size(size);
        let mut ctx = layout.context(Os::Linux);
        ctx.config.policy.network = sandbox_core::Network::Isolated;
        let policy = ctx
            .policy(&layout.demo.chat, &layout.grant_requests(size.grants))
            .expect("the isolated bench policy builds");
        match sandbox_linux::compile(&policy, sandbox_linux::this_kernel()) {
            Ok(plan) => {
                let path = layouts.root().join("plan-isolated.json");
                std::fs::write(&path, serde_json::to_vec(&plan).expect("serialize")).unwrap();
                Some(path)
            }
            Err(e) => {
                eprintln!("!!! the `network = \"isolated\"` row is left out: {e}");
                None
            }
        }
    }

    fn line(out: &mut String, text: impl AsRef<str>) {
        out.push_str(text.as_ref());
        out.push('\n');
    }

    fn machine() -> String {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_else(|| "?".into());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_owned())
            .unwrap_or_else(|_| "?".into());
        let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
        let bwrap = Command::new(BWRAP)
            .arg("--version")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_else(|| "not installed".into());
        let load = std::fs::read_to_string("/proc/loadavg")
            .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_default();
        format!(
            "nproc {nproc}, kernel {kernel}, CPU {cpu}, Landlock ABI {}, {bwrap}, load average at start {load}",
            sandbox_linux::apply::kernel_landlock_abi()
        )
    }

    pub fn main() {
        let opts = options();
        // `cargo bench` builds the binary with the dev-dependencies' features unified in (a
        // slightly different program): scripts/bench.sh passes the `cargo build --release` one.
        let bin = opts
            .binary
            .clone()
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_cli-sandbox")));
        let has_bwrap = Path::new(BWRAP).exists();
        if !has_bwrap {
            eprintln!(
                "!!! {BWRAP} is missing: the bubblewrap comparison is left out (apt-get install bubblewrap)"
            );
        }
        let mut out = String::new();
        line(&mut out, "# cli-sandbox launch benchmarks\n");
        line(&mut out, format!("Machine: {}.", machine()));
        line(
            &mut out,
            format!(
                "Binary: {}{}. Launch rounds {}, CLI rounds {}.\n",
                bin.display(),
                opts.baselines
                    .iter()
                    .map(|(name, b)| format!(", {name} {}", b.display()))
                    .collect::<String>(),
                opts.rounds,
                opts.cli_rounds
            ),
        );

        eprintln!("building the layouts (up to 10,000 workflows and 10,000 chats)...");
        let mut layouts = Layouts::create(&scratch_dir(), &SIZES).expect("build the bench layouts");
        if opts.keep {
            layouts.keep();
            eprintln!("the layouts and plans stay in {}", layouts.root().display());
        }
        let plans: Vec<(PathBuf, LinuxPlan)> =
            SIZES.iter().map(|s| write_plan(&layouts, s)).collect();
        let base = &SIZES[0];
        let base_layout = layouts.for_size(base);
        let home = &base_layout.demo.home;
        let truth = vec![os(TRUE)];

        // 1 and 2: the launches, all sizes in the same rounds. Two reference rows say where
        // the floor is: our binary's own start, and the namespaces alone (util-linux unshare).
        let mut variants = vec![
            Variant::new("bare", truth.clone(), home),
            Variant::new("start", vec![os(&bin), os("--version")], home),
        ];
        if Path::new(UNSHARE).exists() {
            let argv = [UNSHARE, "-U", "-m", "-p", "-f", "--map-root-user", TRUE];
            variants.push(Variant::new(
                "unshare",
                argv.into_iter().map(os).collect(),
                home,
            ));
            // Mount and PID namespaces with a fresh /proc, no user namespace (root only).
            let argv = [UNSHARE, "-m", "-p", "-f", "--mount-proc", TRUE];
            variants.push(Variant::new(
                "unshare proc",
                argv.into_iter().map(os).collect(),
                home,
            ));
        }
        if has_bwrap {
            variants.push(Variant::new("bwrap", bwrap_argv(&truth), home));
            variants.push(Variant::new("bwrap ns", bwrap_ns_argv(&truth), home));
        }
        for (size, (plan, _)) in SIZES.iter().zip(&plans) {
            let layout = layouts.for_size(size);
            let home = &layout.demo.home;
            variants.push(Variant::new(
                format!("exec {}", size.name),
                exec_argv(&bin, plan, &truth),
                home,
            ));
            if size.name == "base" {
                variants.push(Variant::new(
                    "full exec base",
                    full_exec_argv(&bin, plan, &truth),
                    home,
                ));
            }
            variants.push(Variant::new(
                format!("step {}", size.name),
                step_argv(&bin, layout, size.grants, &truth),
                home,
            ));
            if size.name == "base" || size.name == "largest" {
                for (name, baseline) in &opts.baselines {
                    // A baseline that cannot read this plan's format is left out, loudly.
                    variants.push(Variant::new(
                        format!("{name}: exec {}", size.name),
                        exec_argv(baseline, plan, &truth),
                        home,
                    ));
                    variants.push(Variant::new(
                        format!("{name}: step {}", size.name),
                        step_argv(baseline, layout, size.grants, &truth),
                        home,
                    ));
                }
            }
        }
        // `network = "isolated"`: the base plan with a network of the chat's own (pasta).
        if let Some(plan) = isolated_plan(&layouts, base) {
            variants.push(Variant::new(
                "exec isolated",
                exec_argv(&bin, &plan, &truth),
                home,
            ));
        }
        if opts.runs("launch") {
            let launches = measure("launches", &variants, opts.rounds);
            let names: Vec<&str> = opts.baselines.iter().map(|(n, _)| n.as_str()).collect();
            launch_tables(&mut out, &launches, has_bwrap, &names);
        }

        // 3: compile at sizes.
        if opts.runs("compile") {
            eprintln!("compile at sizes...");
            compile_table(&mut out, &layouts, &plans);
        }

        // 4: the real CLIs.
        if opts.runs("cli") {
            real_clis(
                &mut out,
                &bin,
                &plans[0].0,
                home,
                has_bwrap,
                opts.cli_rounds,
            );
        }

        // 5: memory.
        if opts.runs("memory") {
            eprintln!("memory...");
            memory_table(&mut out, &bin, &layouts, &plans);
        }

        // 7: past chats.
        if opts.runs("past") {
            past_chats(&mut out, &bin, opts.rounds);
        }

        // 6: where the time goes.
        if opts.runs("phases") && !opts.phases.is_empty() {
            let exec_plan = &plans[0].0;
            phases_table(&mut out, &opts.phases, exec_plan, base_layout, opts.rounds);
        }

        print!("{out}");
        let _ = std::io::stdout().flush();
        let report = scratch_dir().join("launch-table.md");
        if std::fs::write(&report, &out).is_ok() {
            eprintln!("(also written to {})", report.display());
        }
    }

    /// A demo layout with `past` chats before this one, and whose configuration runs
    /// `/bin/true` as Codex and as Claude; the `pre-trust` and `run` argv of Codex and the
    /// `pre-trust` argv of Claude for a chat of it. Their runtimes gone (`alive` false): the
    /// person's files hold the entries an older launcher wrote for each (Codex's, Claude's and
    /// Gemini's trust), which the first pre-trust prunes. Their runtimes there (never ended):
    /// the files as this launcher and the CLIs leave them: nothing in Codex's (trusted per
    /// launch), the one entry for the runtimes folder in Gemini's, and in `~/.claude.json` a
    /// project member per chat, ours (`hasTrustDialogAccepted`) with what Claude itself keeps
    /// there for each folder it runs in.
    #[allow(clippy::type_complexity)]
    fn past_layout(
        root: &Path,
        past: usize,
        alive: bool,
        bin: &Path,
    ) -> (
        launch::demo::Demo,
        Vec<OsString>,
        Vec<OsString>,
        Vec<OsString>,
    ) {
        let demo = launch::demo::Demo::create(root).expect("a demo layout");
        let runtimes = demo.state_root.join("state/cli-runtimes/v1");
        let mut codex = String::from("model = \"o3\"\n");
        let mut claude = serde_json::Map::new();
        let mut gemini = serde_json::Map::new();
        if alive {
            gemini.insert(
                runtimes.to_str().unwrap().to_owned(),
                serde_json::json!("TRUST_FOLDER"),
            );
        }
        for i in 0..past {
            let runtime = runtimes.join(format!("past-{i}"));
            let key = runtime.to_str().unwrap().to_owned();
            if alive {
                std::fs::create_dir_all(&runtime).unwrap();
                claude.insert(
                    key,
                    serde_json::json!({
                        "allowedTools": [], "mcpContextUris": [], "mcpServers": {},
                        "enabledMcpjsonServers": [], "disabledMcpjsonServers": [],
                        "hasTrustDialogAccepted": true, "projectOnboardingSeenCount": 1,
                        "hasClaudeMdExternalIncludesApproved": false,
                        "hasClaudeMdExternalIncludesWarningShown": false,
                        "lastCost": 0.0123, "lastDuration": 4567,
                        "lastSessionId": format!("0b5c1f2e-0000-4000-8000-{i:012}"),
                    }),
                );
                continue;
            }
            codex.push_str(&format!(
                "\n[projects.\"{key}\"]\ntrust_level = \"trusted\"\n"
            ));
            claude.insert(
                key.clone(),
                serde_json::json!({"hasTrustDialogAccepted": true}),
            );
            gemini.insert(key, serde_json::json!("TRUST_FOLDER"));
        }
        let home = &demo.home;
        std::fs::create_dir_all(home.join(".codex")).unwrap();
        std::fs::write(home.join(".codex/config.toml"), codex).unwrap();
        let claude = serde_json::json!({"numStartups": 3, "hasCompletedOnboarding": true, "projects": claude});
        std::fs::write(
            home.join(".claude.json"),
            serde_json::to_string_pretty(&claude).unwrap(),
        )
        .unwrap();
        std::fs::create_dir_all(home.join(".gemini")).unwrap();
        std::fs::write(
            home.join(".gemini/trustedFolders.json"),
            serde_json::to_string_pretty(&gemini).unwrap(),
        )
        .unwrap();
        let config = std::fs::read_to_string(&demo.config).unwrap();
        std::fs::write(
            &demo.config,
            format!(
                "{config}\n[cli.codex]\nprogram = \"/bin/true\"\n\n[cli.claude]\nprogram = \"/bin/true\"\n"
            ),
        )
        .unwrap();
        let launch = |cmd: &str, cli: &str| -> Vec<OsString> {
            vec![
                os(bin),
                os("--config"),
                os(&demo.config),
                os("--state-root"),
                os(&demo.state_root),
                os(cmd),
                os("--cli"),
                os(cli),
                os("--chat"),
                os(&demo.chat),
                os("--shape"),
                os("structured"),
            ]
        };
        let (pre_trust, run) = (launch("pre-trust", "codex"), launch("run", "codex"));
        let claude = launch("pre-trust", "claude");
        (demo, pre_trust, run, claude)
    }

    /// Section 7: `pre-trust` and `run` with 10 and 10,000 past chats, side by side.
    fn past_chats(out: &mut String, bin: &Path, rounds: usize) {
        eprintln!("past chats: building the layouts...");
        let dir = scratch_dir().join("past-chats");
        let _ = std::fs::remove_dir_all(&dir);
        let mut variants = vec![];
        let mut demos = vec![];
        let mut prune = vec![];
        for (past, alive) in [(10, false), (10_000, false), (10, true), (10_000, true)] {
            let state = if alive { "alive" } else { "gone" };
            let root = dir.join(format!("{past}-{state}"));
            std::fs::create_dir_all(&root).unwrap();
            let (demo, pre_trust, run, claude) = past_layout(&root, past, alive, bin);
            // The first pre-trust prunes the entries of the chats whose runtime is gone: once.
            let first = Variant::new("first", claude.clone(), &demo.home);
            let t = Instant::now();
            first.check().expect("the first pre-trust");
            prune.push((past, state, t.elapsed().as_secs_f64() * 1e3));
            let left = std::fs::read_to_string(demo.home.join(".claude.json")).unwrap();
            prune.push((
                left.matches("cli-runtimes/v1/").count(),
                "entries left",
                0.0,
            ));
            variants.push(Variant::new(
                format!("claude pre-trust {past} {state}"),
                claude,
                &demo.home,
            ));
            variants.push(Variant::new(
                format!("pre-trust {past} {state}"),
                pre_trust,
                &demo.home,
            ));
            variants.push(Variant::new(format!("run {past} {state}"), run, &demo.home));
            demos.push(demo);
        }
        variants.push(Variant::new("bare", vec![os(TRUE)], &demos[0].home));
        let s = measure("past chats", &variants, rounds);
        line(
            out,
            "\n## Past chats: `pre-trust` and `run` (Codex; Claude's `pre-trust`; `/bin/true` as their program) with 10 and 10,000 past chats\n",
        );
        line(
            out,
            "| past chats | their runtimes | pre-trust median ms | run median ms | Claude pre-trust median ms | run added over bare ms | pre-trust ratio to 10 | run ratio to 10 | Claude pre-trust ratio to 10 |",
        );
        line(out, "|---|---|---|---|---|---|---|---|---|");
        for state in ["gone", "alive"] {
            for past in [10, 10_000] {
                let pt = format!("pre-trust {past} {state}");
                let run = format!("run {past} {state}");
                let pt10 = format!("pre-trust 10 {state}");
                let run10 = format!("run 10 {state}");
                let cl = format!("claude pre-trust {past} {state}");
                let cl10 = format!("claude pre-trust 10 {state}");
                let ratio = |a: &str, b: &str| {
                    let (x, y) = (&s.ms[s.index(a)], &s.ms[s.index(b)]);
                    Stats::of(&x.iter().zip(y).map(|(x, y)| x / y).collect::<Vec<_>>()).median
                };
                line(
                    out,
                    format!(
                        "| {past} | {state} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
                        s.of(&pt).median,
                        s.of(&run).median,
                        s.of(&cl).median,
                        s.diff(&run, "bare").median,
                        ratio(&pt, &pt10),
                        ratio(&run, &run10),
                        ratio(&cl, &cl10),
                    ),
                );
            }
        }
        line(
            out,
            "\nThe first pre-trust of Claude in each layout (once, not in the rounds), and the chats' entries left in `~/.claude.json` after it:\n",
        );
        for pair in prune.chunks(2) {
            let ((past, state, ms), (left, _, _)) = (pair[0], pair[1]);
            line(
                out,
                format!("- {past} past chats, runtimes {state}: {ms:.1} ms, {left} entries left"),
            );
        }
    }

    fn launch_tables(out: &mut String, s: &Samples, has_bwrap: bool, baselines: &[&str]) {
        line(
            out,
            "## Launch overhead (base: 10 workflows, 100 chats, 1 grant)\n",
        );
        line(
            out,
            "Wall time from spawn to reaped. Added = median of the per-round differences with \
             bare `/bin/true` (p25 to p75 in brackets); vs unshare likewise with \
             `unshare -U -m -p -f --map-root-user /bin/true` (the namespaces alone), vs bwrap \
             with `bwrap --ro-bind / / --dev /dev /bin/true`.\n",
        );
        line(
            out,
            "| command | median ms | p10 to p90 ms | x bare | added ms | vs unshare ms | vs bwrap ms |",
        );
        line(out, "|---|---:|---:|---:|---:|---:|---:|");
        let bare = s.of("bare");
        let mut rows: Vec<(String, String)> = Vec::new();
        let mut row = |label: &str, text: &str| rows.push((label.to_owned(), text.to_owned()));
        row("bare", "`/bin/true`");
        row(
            "exec base",
            "`cli-sandbox-helper exec --policy PLAN -- /bin/true` (the helper a launch runs)",
        );
        row(
            "full exec base",
            "`cli-sandbox exec --policy PLAN -- /bin/true` (the same helper in the full binary)",
        );
        row(
            "step base",
            "`cli-sandbox step --chat ... --grant ... -- /bin/true`",
        );
        row(
            "exec isolated",
            "`exec` with `network = \"isolated\"` (pasta started, waited for, ended)",
        );
        for name in baselines {
            row(&format!("{name}: exec base"), &format!("{name}: `exec`"));
            row(&format!("{name}: step base"), &format!("{name}: `step`"));
        }
        row(
            "start",
            "reference: `cli-sandbox --version` (our binary's start alone)",
        );
        row(
            "unshare",
            "reference: `unshare -U -m -p -f --map-root-user /bin/true` (our namespaces alone)",
        );
        row(
            "unshare proc",
            "reference: `unshare -m -p -f --mount-proc /bin/true` (no user namespace)",
        );
        row("bwrap", "`bwrap --ro-bind / / --dev /dev /bin/true`");
        row(
            "bwrap ns",
            "`bwrap --unshare-user --unshare-pid --ro-bind / / --dev /dev --proc /proc /bin/true`",
        );
        let has = |label: &str| s.labels.iter().any(|l| l == label);
        let versus = |label: &str, reference: &str| {
            if has(reference) && label != reference {
                let d = s.diff(label, reference);
                format!("{:+.2} [{:+.2}, {:+.2}]", d.median, d.p25, d.p75)
            } else {
                String::new()
            }
        };
        for (label, text) in rows.iter().filter(|(label, _)| has(label)) {
            let st = s.of(label);
            let added = s.diff(label, "bare");
            let reference =
                label == "start" || label.starts_with("unshare") || label.starts_with("bwrap");
            let (vs_unshare, vs_bwrap) = if reference {
                (String::new(), String::new())
            } else {
                (versus(label, "unshare"), versus(label, "bwrap"))
            };
            line(
                out,
                format!(
                    "| {text} | {:.2} | {:.2} to {:.2} | {:.2} | {:+.2} [{:+.2}, {:+.2}] | {vs_unshare} | {vs_bwrap} |",
                    st.median,
                    st.p10,
                    st.p90,
                    st.median / bare.median,
                    added.median,
                    added.p25,
                    added.p75,
                ),
            );
        }
        line(out, "");

        line(out, "## Launch at scale (same rounds)\n");
        line(
            out,
            "`exec` runs a plan compiled once; `step` builds the policy and compiles the plan on \
             every launch. Added ms against bare `/bin/true`, median of per-round differences.\n",
        );
        line(
            out,
            "| size | workflows | chats | grants | exec median ms | exec added ms | step median ms | step added ms |",
        );
        line(out, "|---|---:|---:|---:|---:|---:|---:|---:|");
        for size in &SIZES {
            let exec = format!("exec {}", size.name);
            let step = format!("step {}", size.name);
            line(
                out,
                format!(
                    "| {} | {} | {} | {} | {:.2} | {:+.2} | {:.2} | {:+.2} |",
                    size.name,
                    size.workflows,
                    size.chats,
                    size.grants,
                    s.of(&exec).median,
                    s.diff(&exec, "bare").median,
                    s.of(&step).median,
                    s.diff(&step, "bare").median,
                ),
            );
        }
        for baseline in baselines {
            for name in ["base", "largest"] {
                let exec = format!("{baseline}: exec {name}");
                let step = format!("{baseline}: step {name}");
                let cell = |label: &str| {
                    if has(label) {
                        (
                            format!("{:.2}", s.of(label).median),
                            format!("{:+.2}", s.diff(label, "bare").median),
                        )
                    } else {
                        ("not run".to_owned(), String::new())
                    }
                };
                let ((em, ea), (sm, sa)) = (cell(&exec), cell(&step));
                line(
                    out,
                    format!("| {name}, {baseline} | | | | {em} | {ea} | {sm} | {sa} |"),
                );
            }
        }
        line(out, "");
        let base_exec = s.diff("exec base", "bare").median;
        let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
        line(out, "Targets:\n");
        line(
            out,
            format!(
                "- exec within 2 ms of bare: {:+.2} ms, {}; step: {:+.2} ms, {}.",
                base_exec,
                verdict(base_exec <= 2.0),
                s.diff("step base", "bare").median,
                verdict(s.diff("step base", "bare").median <= 2.0),
            ),
        );
        if has("unshare") {
            let e = s.diff("exec base", "unshare").median;
            let st = s.diff("step base", "unshare").median;
            line(
                out,
                format!(
                    "- within 0.5 ms of `unshare -U -m -p -f --map-root-user`: exec {e:+.2} ms, \
                     {}; step {st:+.2} ms, {}.",
                    verdict(e <= 0.5),
                    verdict(st <= 0.5)
                ),
            );
        }
        if has_bwrap {
            let e = s.diff("exec base", "bwrap").median;
            let st = s.diff("step base", "bwrap").median;
            line(
                out,
                format!(
                    "- no slower than bubblewrap: exec {:+.2} ms, {}; step {:+.2} ms, {}.",
                    e,
                    verdict(e <= 0.0),
                    st,
                    verdict(st <= 0.0)
                ),
            );
        }
        let grow = |launcher: &str, name: &str| {
            let d = s.diff(&format!("{launcher} {name}"), &format!("{launcher} base"));
            format!("{:+.2} [{:+.2}, {:+.2}]", d.median, d.p25, d.p75)
        };
        for launcher in ["exec", "step"] {
            line(
                out,
                format!(
                    "- {launcher} against {launcher} at base (per-round differences, ms): \
                     10,000 workflows {}, 10,000 chats {}, both {}, 100 grants {}, \
                     1,000 grants {}.",
                    grow(launcher, "10,000 workflows"),
                    grow(launcher, "10,000 chats"),
                    grow(launcher, "10,000 workflows and chats"),
                    grow(launcher, "100 grants"),
                    grow(launcher, "1,000 grants"),
                ),
            );
        }
        line(out, "");
    }

    /// The longest quoted string in the profile text, and the longest parameter value: each is
    /// a string `sandbox-exec` has to take.
    fn longest_string(profile: &SeatbeltProfile) -> usize {
        let in_text = profile
            .text
            .split('"')
            .skip(1)
            .step_by(2)
            .map(str::len)
            .max()
            .unwrap_or(0);
        let in_params = profile.params.values().map(String::len).max().unwrap_or(0);
        in_text.max(in_params)
    }

    fn compile_table(out: &mut String, layouts: &Layouts, plans: &[(PathBuf, LinuxPlan)]) {
        line(
            out,
            "## Policy build, Seatbelt profile, Linux plan (in process)\n",
        );
        line(
            out,
            "Median of up to 30 runs, in ms (p90 in brackets). The policy is built on the real \
             disk (grants canonicalized); the Seatbelt profile from the macOS policy of the same \
             layout; the Linux plan against this kernel; plan write: `linux::write_plan`, which \
             `cli-sandbox run` adds before the helper starts. Filters: path filters in the \
             profile; longest string: the longest quoted string or parameter value it hands to \
             `sandbox-exec`.\n",
        );
        line(
            out,
            "| size | policy build | Seatbelt profile | Linux plan | plan write | profile text bytes | params | params bytes | filters | longest string | plan mounts | plan JSON bytes |",
        );
        line(
            out,
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        );
        let kernel = sandbox_linux::this_kernel();
        let mut largest = [0.0; 3];
        let mut sizes_text = Vec::new();
        for (size, (plan_path, plan)) in SIZES.iter().zip(plans) {
            let layout = layouts.for_size(size);
            let ctx = layout.context(Os::Linux);
            let grants = layout.grant_requests(size.grants);
            let build = time_in_process(|| ctx.policy(&layout.demo.chat, &grants).unwrap());
            let mac_policy = layout.policy(Os::MacOs, size.grants);
            let seatbelt = time_in_process(|| SeatbeltProfile::for_policy(&mac_policy).unwrap());
            let linux_policy = layout.policy(Os::Linux, size.grants);
            let compile =
                time_in_process(|| sandbox_linux::compile(&linux_policy, kernel).unwrap());
            let write = time_in_process(|| sandbox_linux::write_plan(plan, &ctx.layout).unwrap());
            let profile = SeatbeltProfile::for_policy(&mac_policy).unwrap();
            let params_bytes: usize = profile.params.iter().map(|(k, v)| k.len() + v.len()).sum();
            let filters = profile.text.matches("(param \"").count();
            let mounts = plan.namespaces.as_ref().map_or(0, |n| n.mounts.len());
            let plan_bytes = std::fs::metadata(plan_path).map_or(0, |m| m.len());
            if size.name == "largest" {
                largest = [build.median, seatbelt.median, compile.median];
            }
            sizes_text.push((size.grants, profile.text.len()));
            line(
                out,
                format!(
                    "| {} | {:.3} [{:.3}] | {:.3} [{:.3}] | {:.3} [{:.3}] | {:.3} [{:.3}] | {} | {} | {} | {} | {} | {} | {} |",
                    size.name,
                    build.median,
                    build.p90,
                    seatbelt.median,
                    seatbelt.p90,
                    compile.median,
                    compile.p90,
                    write.median,
                    write.p90,
                    profile.text.len(),
                    profile.params.len(),
                    params_bytes,
                    filters,
                    longest_string(&profile),
                    mounts,
                    plan_bytes,
                ),
            );
        }
        line(out, "");
        let one_grant: Vec<usize> = sizes_text
            .iter()
            .filter(|(g, _)| *g == 1)
            .map(|(_, b)| *b)
            .collect();
        let constant = one_grant.windows(2).all(|w| w[0] == w[1]);
        let [build, seatbelt, compile] = largest;
        let each = build.max(seatbelt).max(compile);
        line(out, "Targets:\n");
        line(
            out,
            format!(
                "- largest size: policy build {build:.2} ms, Seatbelt profile {seatbelt:.2} ms, \
                 Linux plan {compile:.2} ms: each under 10 ms, {}. A Linux launch prepares \
                 both the policy and the plan: {:.2} ms.",
                if each < 10.0 { "met" } else { "MISSED" },
                build + compile
            ),
        );
        line(
            out,
            format!(
                "- Seatbelt profile text the same size for every workflow and chat count (at one \
                 grant): {}.\n",
                if constant { "yes" } else { "NO" }
            ),
        );
    }

    fn real_clis(
        out: &mut String,
        bin: &Path,
        plan: &Path,
        home: &Path,
        has_bwrap: bool,
        rounds: usize,
    ) {
        line(out, "## Start of the real CLIs\n");
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/node_modules/.bin");
        let mut variants = Vec::new();
        let mut names = Vec::new();
        for name in ["claude", "codex"] {
            let program = dir.join(name);
            if !program.exists() {
                eprintln!(
                    "!!! {} is missing: the real-CLI rows are left out (install with `npm ci --prefix tests`)",
                    program.display()
                );
                line(
                    out,
                    format!("- `{name}` not installed (`npm ci --prefix tests`): left out."),
                );
                continue;
            }
            let argv = vec![os(&program), os("--version")];
            variants.push(Variant::new(format!("{name} bare"), argv.clone(), home));
            variants.push(Variant::new(
                format!("{name} confined"),
                exec_argv(bin, plan, &argv),
                home,
            ));
            if has_bwrap {
                variants.push(Variant::new(
                    format!("{name} bwrap"),
                    bwrap_argv(&argv),
                    home,
                ));
            }
            names.push(name);
        }
        if names.is_empty() {
            line(out, "");
            return;
        }
        let s = measure("real CLIs", &variants, rounds);
        line(
            out,
            "`NAME --version`, bare and under `cli-sandbox exec` (base plan). Share = added / \
             confined median.\n",
        );
        line(
            out,
            "| CLI | bare median ms | confined median ms | added ms [p25, p75] | our share of the start | bwrap median ms |",
        );
        line(out, "|---|---:|---:|---:|---:|---:|");
        for name in names {
            let bare = format!("{name} bare");
            let confined = format!("{name} confined");
            let bw = format!("{name} bwrap");
            if !s.labels.contains(&bare) || !s.labels.contains(&confined) {
                line(
                    out,
                    format!("| {name} | failed to run; see the log | | | | |"),
                );
                continue;
            }
            let added = s.diff(&confined, &bare);
            let c = s.of(&confined).median;
            let bwrap = if s.labels.contains(&bw) {
                format!("{:.1}", s.of(&bw).median)
            } else {
                "-".into()
            };
            line(
                out,
                format!(
                    "| `{name} --version` | {:.1} | {:.1} | {:+.2} [{:+.2}, {:+.2}] | {:.1} % | {bwrap} |",
                    s.of(&bare).median,
                    c,
                    added.median,
                    added.p25,
                    added.p75,
                    100.0 * added.median / c,
                ),
            );
        }
        line(out, "");
    }

    /// The clock of the `PHASE` marks (`CLOCK_MONOTONIC`), in µs.
    fn monotonic_us() -> i64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a local timespec, alive and exclusively borrowed for the call.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        // CLOCK_MONOTONIC exists on every kernel we run on; a failure would leave `ts` at 0,
        // which shows in the marks.
        debug_assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC)");
        ts.tv_sec * 1_000_000 + ts.tv_nsec / 1_000
    }

    /// What ends one launch after its last mark: the program's own run and exit, init's end,
    /// the namespaces' teardown, the helper's reaping and exit.
    const LAST_STEP: &str = "(after the last mark) the program runs and ends; init, the helper end";

    /// One launch of a `phase-times` build: the name of each mark with the µs since the one
    /// before (the first since the spawn), then [`LAST_STEP`] up to the reaping; `None` if the
    /// launch failed.
    fn phases_of(variant: &Variant) -> Option<Vec<(String, f64)>> {
        let mut cmd = variant.command();
        // The marks' switch in builds that read one (a patched older tree); ignored by ours.
        cmd.env("CLI_SANDBOX_PHASE_TIMES", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let spawned = monotonic_us();
        let out = cmd.output().ok()?;
        let reaped = monotonic_us();
        if !out.status.success() {
            return None;
        }
        let mut marks: Vec<(i64, String)> = String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter_map(|l| {
                let mut f = l.strip_prefix("PHASE ")?.splitn(3, ' ');
                let us = f.next()?.parse().ok()?;
                let _pid = f.next()?;
                Some((us, f.next()?.to_owned()))
            })
            .collect();
        marks.sort_by_key(|(us, _)| *us);
        let mut before = spawned;
        let mut steps = Vec::with_capacity(marks.len() + 1);
        for (us, name) in marks {
            steps.push((name, (us - before) as f64));
            before = us;
        }
        steps.push((LAST_STEP.to_owned(), (reaped - before) as f64));
        Some(steps)
    }

    /// Where the time of one `exec` and one `step` launch goes, per build, from the `PHASE`
    /// marks (median µs of each step over the runs, interleaved like the launch rounds).
    fn phases_table(
        out: &mut String,
        builds: &[(String, PathBuf)],
        plan: &Path,
        layout: &ScaledLayout,
        rounds: usize,
    ) {
        let runs = (rounds / 4).clamp(20, 100);
        let truth = vec![os(TRUE)];
        let home = &layout.demo.home;
        let mut variants = Vec::new();
        for (name, bin) in builds {
            variants.push((
                name,
                "exec",
                Variant::new("exec", exec_argv(bin, plan, &truth), home),
            ));
            variants.push((
                name,
                "step",
                Variant::new("step", step_argv(bin, layout, 1, &truth), home),
            ));
        }
        eprint!("phases: {} launches x {runs} ", variants.len());
        // Per variant: each step's samples, in the order the steps came in.
        let mut steps: Vec<Vec<(String, Vec<f64>)>> = vec![Vec::new(); variants.len()];
        let mut totals: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
        let mut failed = vec![false; variants.len()];
        let mut shuffle = Shuffle(0x2545_F491_4F6C_DD1D);
        for round in 0..runs + 2 {
            for i in shuffle.order(variants.len()) {
                let Some(seen) = phases_of(&variants[i].2) else {
                    failed[i] = true;
                    continue;
                };
                if round < 2 {
                    continue;
                }
                totals[i].push(seen.iter().map(|(_, us)| us).sum());
                for (name, us) in seen {
                    match steps[i].iter_mut().find(|(n, _)| *n == name) {
                        Some((_, samples)) => samples.push(us),
                        None => steps[i].push((name, vec![us])),
                    }
                }
            }
            if round % 10 == 0 {
                eprint!(".");
            }
        }
        eprintln!();
        line(
            out,
            "## Where the time of a launch goes
",
        );
        line(
            out,
            format!(
                "Builds with the `phase-times` feature print a mark at the end of each step \
                 (`PHASE <µs> <pid> <name>`); each row is the time from the mark before (the \
                 first: from the spawn, so the binary's own start) to its own, median µs of \
                 {runs} launches of `/bin/true` at base. Medians do not add up to the total's \
                 median exactly.\n"
            ),
        );
        for (b, (name, _)) in builds.iter().enumerate() {
            let (exec, step) = (2 * b, 2 * b + 1);
            line(out, format!("### {name}\n"));
            if failed[exec] || failed[step] {
                line(out, "(a launch failed: see the log)\n");
            }
            line(out, "| step (ends at the mark) | exec µs | step µs |");
            line(out, "|---|---:|---:|");
            // The step launch's steps in order, with those only exec has where exec has them.
            let mut order: Vec<String> = steps[step].iter().map(|(n, _)| n.clone()).collect();
            let mut at = 0;
            for (n, _) in &steps[exec] {
                match order.iter().position(|o| o == n) {
                    Some(p) => at = p + 1,
                    None => {
                        order.insert(at, n.clone());
                        at += 1;
                    }
                }
            }
            let cell = |i: usize, n: &str| {
                steps[i]
                    .iter()
                    .find(|(m, _)| m == n)
                    .map_or(String::new(), |(_, v)| {
                        format!("{:.0}", Stats::of(v).median)
                    })
            };
            for n in &order {
                line(
                    out,
                    format!("| {n} | {} | {} |", cell(exec, n), cell(step, n)),
                );
            }
            line(
                out,
                format!(
                    "| total, spawn to reaped | {:.0} | {:.0} |",
                    Stats::of(&totals[exec]).median,
                    Stats::of(&totals[step]).median
                ),
            );
            line(out, "");
        }
    }

    /// `(VmRSS, VmHWM, Pss)` of a process, in KiB.
    fn memory_of(pid: u32) -> (u64, u64, u64) {
        let field = |text: &str, name: &str| -> u64 {
            text.lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let rollup =
            std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
        (
            field(&status, "VmRSS:"),
            field(&status, "VmHWM:"),
            field(&rollup, "Pss:"),
        )
    }

    fn children(pid: u32) -> Vec<u32> {
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }

    /// Starts `launcher` (an `exec` or `step` command line ending in `--`) around
    /// `sh -c 'read x'` and reads the helper's and init's memory while the program waits (the
    /// peak, `VmHWM`, is reached during setup: afterwards both only wait). Then ends the program.
    /// `ru_maxrss` is not used: a child started by fork or vfork inherits its parent's peak.
    fn helper_memory(launcher: &[OsString], home: &Path) -> Option<[u64; 5]> {
        let mut argv = launcher.to_vec();
        argv.extend([os("/bin/sh"), os("-c"), os("read x")]);
        let variant = Variant::new("memory", argv, home);
        let mut cmd = variant.command();
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().ok()?;
        let helper = child.id();
        let started = Instant::now();
        let mut found = None;
        while started.elapsed() < Duration::from_secs(10) {
            if let Some(&init) = children(helper).first()
                && !children(init).is_empty()
            {
                found = Some(init);
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let readings = found.map(|init| (memory_of(helper), memory_of(init)));
        drop(child.stdin.take());
        let _ = child.wait();
        let ((h_rss, h_hwm, h_pss), (i_rss, i_hwm, i_pss)) = readings?;
        Some([h_rss, h_hwm, h_pss, i_rss.max(i_hwm), i_pss])
    }

    fn memory_table(
        out: &mut String,
        bin: &Path,
        layouts: &Layouts,
        plans: &[(PathBuf, LinuxPlan)],
    ) {
        line(out, "## Memory of the exec helper\n");
        line(
            out,
            "Read while the program (`sh -c 'read x'`) runs: the helper waits for the chat for \
             its whole life, and init (pid 1 of the chat's PID namespace) beside it. RSS now, \
             peak (`VmHWM`, reached during setup), and PSS (the binary's pages are shared by \
             every chat's helper). `step` is the same process after it built the policy and \
             compiled the plan itself.\n",
        );
        line(
            out,
            "| launcher | size | helper RSS KiB | helper peak KiB | helper PSS KiB | init peak KiB | init PSS KiB |",
        );
        line(out, "|---|---|---:|---:|---:|---:|---:|");
        for (size, (plan, _)) in SIZES.iter().zip(plans) {
            if !matches!(size.name, "base" | "1,000 grants" | "largest") {
                continue;
            }
            let layout = layouts.for_size(size);
            let home = &layout.demo.home;
            for (launcher, argv) in [
                ("exec", exec_argv(bin, plan, &[])),
                ("step", step_argv(bin, layout, size.grants, &[])),
            ] {
                match helper_memory(&argv, home) {
                    Some([h_rss, h_hwm, h_pss, i_hwm, i_pss]) => line(
                        out,
                        format!(
                            "| {launcher} | {} | {h_rss} | {h_hwm} | {h_pss} | {i_hwm} | {i_pss} |",
                            size.name
                        ),
                    ),
                    None => line(
                        out,
                        format!("| {launcher} | {} | could not be read | | | | |", size.name),
                    ),
                }
            }
        }
        line(out, "");
    }
}
