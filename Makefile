# Deferred user-space stack unwinding for Linux 6.12 LTS: the series in
# patches/ and the harness that proves it. `make help` lists the targets.

SHELL      := /bin/bash
ROOT       := $(abspath .)
BUILD      := $(ROOT)/build
PYTHON     := /usr/bin/python3
PYTEST     := $(PYTHON) -m pytest
# The harness's Python is one package, ci (python3 -m ci.guest.arch ...).
export PYTHONPATH := $(ROOT)$(if $(PYTHONPATH),:$(PYTHONPATH))
# Which guest kernel: normal (base + feature), debug (+ KASAN, lockdep,
# atomic-sleep checks; kmemleak built in, off), rt and rt-debug (the same
# on PREEMPT_RT), stress (the debug kernel booted with kmemleak on, for
# make stress), kcsan (KCSAN + kmemleak, for make stress-kcsan) or
# nounwind (the series without UNWIND_USER): the table in
# ci/build/configs.py.
CONFIG     ?= normal
# The guest architecture: x86_64 (default) or arm64 (cross-built with
# Debian's aarch64 toolchain, QEMU's virt machine under TCG). Its details
# are in ci/guest/$(ARCH).py; anything else is refused here (exit 2).
ARCH       ?= x86_64
# What make derives from ARCH and CONFIG (the architecture's canonical name,
# its selftests' CMake arguments, whether its guest gets python3 + perf.so,
# its vCPUs, the configuration's guest timeout), asked in one call of the
# configuration table, ci/build/configs.py, which refuses an unknown ARCH
# or CONFIG (exit 2). Written to a file under build/ and included.
CONFIG_MK  := $(BUILD)/make/$(subst /,_,$(ARCH))-$(subst /,_,$(CONFIG)).mk
# The file is written under a name of this make's own (its shell's pid)
# and renamed: makes of one configuration run side by side in make check.
CONFIG_ERR := $(shell mkdir -p $(BUILD)/make && t='$(CONFIG_MK)'.$$$$ && \
		$(PYTHON) -m ci.build.configs make '$(ARCH)' '$(CONFIG)' \
		>"$$t" 2>&1 && mv "$$t" '$(CONFIG_MK)' || \
		{ cat "$$t"; rm -f "$$t"; })
ifneq ($(CONFIG_ERR),)
$(error $(CONFIG_ERR))
endif
include $(CONFIG_MK)
export VMTEST_ARCH := $(ARCH_NAME)
# x86_64's outputs keep their names; another architecture's carry it
# (kobj-arm64-normal, selftests-arm64, ...), so both live side by side.
ASFX       := $(if $(filter x86_64,$(ARCH_NAME)),,-$(ARCH_NAME))
# The kernel tree: build/linux (Debian's linux-source-6.12 + patches/) unless
# KERNEL=DIR names another tree, which is then used exactly as it is.
ifeq ($(KERNEL),)
KSRC       := $(BUILD)/linux
TREE_ID    := linux
TREE_DEP   := tree
else
KSRC       := $(abspath $(KERNEL))
TREE_ID    := $(notdir $(KSRC))-$(shell echo $(KSRC) | md5sum | cut -c1-6)
TREE_DEP   :=
endif
# Everything built for one tree lives under build/out/<tree>/, so runs
# against different trees never share a file.
OUT        := $(BUILD)/out/$(TREE_ID)
# CONFIG=stress boots the debug kernel (kmemleak on at boot): kobj-debug.
KOBJ       := $(OUT)/kobj$(ASFX)-$(CONFIG_KERNEL)
# ci/build/kconfig.py's arguments: the configuration's fragments come from
# the table. KCONFIG_OFF="A B": options turned off after every fragment
# (without CONFIG_), e.g. a series KUnit suite that does not build on an
# arch yet; a series suite left out so fails the run on a feature kernel.
KCONFIG_ARGS := --config $(CONFIG) $(foreach o,$(KCONFIG_OFF),--off $(o))
VM_TIMEOUT ?= $(CONFIG_VM_TIMEOUT)
SMP        ?= $(ARCH_SMP)
FILTER     ?=
ST_BUILD   := $(OUT)/selftests$(ASFX)
ST_INSTALL := $(OUT)/selftests$(ASFX)-install
INITRD     := $(OUT)/initramfs$(ASFX).cpio.gz
# perf for the guest, built statically from the tree under test, or from
# PERF_TREE=DIR: e.g. the patched perf on an unpatched kernel, to see it
# fall back.
ifeq ($(PERF_TREE),)
PERF_SRC   := $(KSRC)
PERF_OUT   := $(OUT)/perf$(ASFX)
else
PERF_SRC   := $(abspath $(PERF_TREE))
PERF_OUT   := $(BUILD)/out/$(if $(filter $(BUILD)/linux,$(PERF_SRC)),linux,$(notdir $(PERF_SRC))-$(shell echo $(PERF_SRC) | md5sum | cut -c1-6))/perf$(ASFX)
endif
# Upstream perf (Linux 7.2's) for the tests that record with one perf and
# read with the other: one build for every tree.
PERF_UPSTREAM_OUT := $(BUILD)/out/perf-upstream/perf$(ASFX)
# make vmtest-upstream: the suite on unpatched upstream Linux 7.2 (Debian
# unstable's linux-source-7.2, unpacked here by ci/series/upstream-tree.sh) with
# that tree's own perf, perf.so and perf shell tests.
UPSTREAM_TREE ?= $(BUILD)/upstream-7.2
RUN_DIR    := $(OUT)/vmtest$(ASFX)-$(CONFIG)$(if $(filter-out off no 0,$(SLOW)),-slow)$(if $(filter single,$(TCG_THREAD)),-onethread)$(if $(filter multi,$(TCG_THREAD)),-threads)
# make bench: BENCH=quick|full|libs (the SFrame walk on distinct functions)|maps
# (mmap of libraries with and without .sframe)|exitpath (only the untraced
# getppid loop), in a guest with one vCPU per host core
# (SMP= overrides): timed runs under TCG do not share a core.
BENCH      ?= full
BENCH_SMP  := $(if $(filter command line,$(origin SMP)),$(SMP),$(shell nproc))
# make realstacks: REALSTACKS=all, or PROGRAM:BUILD[:ENTRY] items
# (xz:fp,sqlite3:all,all:all:libc; programs xz gzip sqlite3, builds deb fp
# sframe, entries shim (the default) libc): real programs' deferred stacks
# against glibc's backtrace() (doc/realstacks.md), x86-64 only.
REALSTACKS ?= all
REALSTACKS_OUT := $(BUILD)/realstacks
REALSTACKS_INITRD := $(OUT)/initramfs-realstacks.cpio.gz
# make stress: STRESS_S seconds of fuzzing and lifecycle storms on the
# debug kernel booted with kmemleak on, in a guest with SMP vCPUs.
STRESS_S   ?= 180
# STRESS_ARGS=--percpu-groups,--repro-group-hotplug: more options for
# the guest program (selftests/stress/).
STRESS_ARGS ?=
# Seconds of fuzzing of the SFrame reader: make fuzz, and make test's run.
FUZZ_S ?= 600
FUZZ_TEST_S ?= 10
# ACCEL=kvm|tcg forces QEMU's accelerator; by default KVM is used only when
# a short probe boot shows that it works (ci/guest/accel.py).
export ACCEL
# SLOW=on|N: run the guest as on a host N times slower (on: 3): QEMU gets
# 1/N of the host's time (ci/guest/vm.py, doc/harness.md "Slow hosts").
SLOW       ?=
export VMTEST_SLOW := $(SLOW)
# TCG_THREAD=single: every vCPU of a TCG guest on one host thread, as the
# boot after an emulator fault runs (ci/guest/vm.py --tcg-thread), and as
# an arm64 kernel with CONFIG_JUMP_LABEL boots by default; multi: a thread
# per vCPU even then. Either names its run directory (-onethread, -threads).
TCG_THREAD ?=
export VMTEST_TCG_THREAD := $(TCG_THREAD)
# make overhead ICOUNT=on|off: the TCG guest's clock counts its
# instructions, 1 ns each (ci/guest/vm.py --icount), so a time measured in
# the guest is the same on any host, under any load. On by default (off
# with SLOW=), with one vCPU (SMP= overrides); no other target uses it.
ICOUNT     ?=
OVERHEAD_ICOUNT := $(or $(ICOUNT),$(if $(filter-out off no 0,$(SLOW)),off,on))
OVERHEAD_SMP := $(if $(filter command line,$(origin SMP)),$(SMP),$(if $(filter on yes 1,$(OVERHEAD_ICOUNT)),1,$(shell nproc)))
# EXPECT_FEATURE=yes|no|auto: whether a skipped feature test fails (auto:
# yes when the kernel's .config enables the series, CONFIG_UNWIND_USER=y).
export EXPECT_FEATURE

.PHONY: help deps tree apply export export-check kernel toolchains selftests perf perf-asan perf-upstream perf-python initramfs vmtest test-perf \
	upstream-tree vmtest-upstream \
	verdict vmtest-debug stress stress-kcsan stress-rt stress-run test checkpatch apply-fresh bisect-build check \
	kunit clean kernel-doc sparse submit-check send bench mutate golden fuzz matrix \
	realprograms initramfs-realstacks realstacks overhead guest-recording trace-recording

help: ## list the targets
	@echo "usage: make TARGET [KERNEL=DIR] [ARCH=x86_64|arm64] [CONFIG=normal|debug|rt|rt-debug|debian|debian-rt|stress|kcsan|nounwind] [FILTER=gtest-filter] [PERF_TREE=DIR] [SLOW=on] [TCG_THREAD=single|multi]"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | \
		awk -F':.*## ' '{ printf "  %-14s %s\n", $$1, $$2 }'

deps: ## install every Debian package the harness needs (idempotent)
	@bash ci/build/deps.sh

tree: deps ## make build/linux: Debian's 6.12 source as git, base + patches/
	@bash ci/series/tree.sh

apply: deps ## apply patches/ (fixes, then feature) to KERNEL=DIR with git am (SERIES=fixes: the fixes alone; INIT=1: git-less tree)
	@SERIES="$(SERIES)" bash ci/series/apply.sh "$(KERNEL)"

export: deps ## regenerate patches/fixes/ and patches/feature/ from build/linux's commits (+ cover letters)
	@bash ci/series/export.sh "$(KSRC)" "$(BASE)"

export-check: deps $(TREE_DEP) ## whether patches/ is what make export writes from the tree (cover letters included)
	@bash ci/series/export-check.sh "$(KSRC)" "$(BASE)"

kernel: deps $(TREE_DEP) ## configure (every option verified) and build the guest kernel
	@bash ci/build/kernel.sh "$(KSRC)" "$(KOBJ)" $(KCONFIG_ARGS)

# The binutils of three Debian suites, one per SFrame version, for the
# SFrame helpers (ci/build/toolchains.sh: fetched once, cached in build/).
toolchains: deps ## fetch Debian bookworm's, trixie's and sid's binutils (SFrame v1, v2, v3) into build/toolchains
	@bash ci/build/toolchains.sh $(BUILD)/toolchains$(ASFX)

selftests: deps toolchains ## build the C++ GoogleTest selftests (static), 32-bit and SFrame helpers
	@cmake -S selftests -B $(ST_BUILD) -DCMAKE_BUILD_TYPE= $(ARCH_CMAKE) \
		-DSFRAME_TOOLCHAINS=$(BUILD)/toolchains$(ASFX) >/dev/null
	@$(MAKE) -s -C $(ST_BUILD) -j$$(nproc) >$(ST_BUILD)/build.log 2>&1 || \
		{ grep -E 'error|Error' $(ST_BUILD)/build.log | head -30; \
		  echo "selftests build failed: $(ST_BUILD)/build.log"; exit 1; }
	@rm -rf $(ST_INSTALL) && cmake --install $(ST_BUILD) --prefix $(ST_INSTALL) >/dev/null

perf: deps $(TREE_DEP) ## build tools/perf of the tree statically for the guest
	@bash ci/build/perf.sh "$(PERF_SRC)" "$(PERF_OUT)"

perf-asan: deps $(TREE_DEP) ## the same perf for the host with AddressSanitizer (test-perf's hostile streams)
	@PERF_SANITIZE=address bash ci/build/perf.sh "$(PERF_SRC)" "$(PERF_OUT)-asan"

perf-upstream: deps ## build upstream perf (Linux 7.2's, Debian unstable's linux-source-7.2) for the interop tests
	@bash ci/build/perf-upstream.sh "$(PERF_UPSTREAM_OUT)"

perf-python: deps $(TREE_DEP) ## build perf's python binding (perf.so) of the tree for Debian's python3
	@bash ci/build/perf-python.sh "$(PERF_SRC)" "$(PERF_OUT)-python"

initramfs: selftests perf perf-upstream $(if $(ARCH_PY),perf-python) $(TREE_DEP) ## pack busybox, ci/guest/init, perf, upstream perf, python3 + perf.so, Debian's trace-cmd and the selftests
	@PERF_BIN="$(PERF_OUT)/perf" PERF_SHELL="$(PERF_SRC)/tools/perf/tests/shell" \
		PERF_UPSTREAM_BIN="$(PERF_UPSTREAM_OUT)/perf" \
		PERF_PYTHON="$(if $(ARCH_PY),$(PERF_OUT)-python/perf.so)" \
		TRACE_CMD_BIN="$(if $(ARCH_PY),/usr/bin/trace-cmd)" \
		bash ci/guest/mkinitramfs.sh $(INITRD) $(ST_INSTALL) $(KSRC)

vmtest: kernel initramfs ## boot the guest, run KUnit + selftests, print the verdict
	@bash ci/judge/vmtest.sh "$(KOBJ)" "$(INITRD)" "$(RUN_DIR)" "$(SMP)" "$(VM_TIMEOUT)" "$(FILTER)"

upstream-tree: deps ## make build/upstream-7.2: Debian unstable's linux-source-7.2, unpatched, as git (UPSTREAM_TREE=DIR)
	@bash ci/series/upstream-tree.sh "$(UPSTREAM_TREE)"

vmtest-upstream: upstream-tree ## make vmtest on upstream Linux 7.2 with its own perf: the conformance count there (doc/upstream/conformance.md)
	@$(MAKE) --no-print-directory vmtest KERNEL="$(UPSTREAM_TREE)" PERF_TREE="$(UPSTREAM_TREE)"

verdict: ## judge a saved run again without booting: make verdict RUN=DIR
	@bash ci/judge/verdict.sh "$(RUN)"

bench: kernel initramfs ## what deferral saves and costs, one guest run: table, CSV/JSON, plot (BENCH=quick|full|libs|maps|exitpath)
	@bash ci/judge/bench.sh "$(KOBJ)" "$(INITRD)" "$(OUT)/bench$(ASFX)$(if $(filter-out full,$(BENCH)),-$(BENCH))" "$(BENCH_SMP)" "$(BENCH)"

realprograms: deps toolchains ## fetch and build make realstacks' programs (Debian's xz, gzip, sqlite3: as packaged, with frame pointers, with SFrame) into build/realstacks
	@bash ci/build/realprograms.sh $(REALSTACKS_OUT)

initramfs-realstacks: selftests perf realprograms $(TREE_DEP) ## make initramfs plus make realstacks' programs under /realstacks
	@PERF_BIN="$(PERF_OUT)/perf" REALSTACKS_DIR="$(REALSTACKS_OUT)/guest" \
		bash ci/guest/mkinitramfs.sh $(REALSTACKS_INITRD) $(ST_INSTALL) $(KSRC)

realstacks: kernel initramfs-realstacks ## real programs' deferred stacks against glibc's backtrace(), one guest run: the table (REALSTACKS=all|PROG:BUILD[:ENTRY],...)
	@bash ci/judge/realstacks.sh "$(KOBJ)" "$(REALSTACKS_INITRD)" "$(OUT)/realstacks" "$(SMP)" "$(REALSTACKS)"

# make overhead: the real programs' run time unprofiled and sampled at 1
# and 10 kHz, user callchains in place and deferred (doc/bench.md)
# PROFILE=1: instead, where the deferred walks' time goes (a profile of
# the kernel while each program's fp and SFrame builds are sampled)
OVERHEAD_PLAN := $(if $(filter-out 0 no off,$(PROFILE)),profile,overhead)
overhead: kernel initramfs-realstacks ## what sampling costs real programs (xz, gzip, sqlite3), in place against deferred, one guest run (PROFILE=1: where the walks' time goes)
	@VMTEST_ICOUNT=$(OVERHEAD_ICOUNT) bash ci/judge/realstacks.sh "$(KOBJ)" "$(REALSTACKS_INITRD)" "$(OUT)/$(OVERHEAD_PLAN)" "$(OVERHEAD_SMP)" $(OVERHEAD_PLAN)

# The host tests' real recording (tests/data/guest-recording): gzip built
# with SFrame, its deferred recording from the guest, converted by our perf.
GUEST_RECORDING := gzip-sframe-shim-deferred
guest-recording: ## refresh tests/data/guest-recording: a real program's deferred recording from the guest, converted (test-perf's readers check it)
	@$(MAKE) --no-print-directory realstacks REALSTACKS=gzip:sframe,data
	@bash ci/judge/save-recording.sh "$(OUT)/realstacks/data/$(GUEST_RECORDING)" \
		"$(PERF_OUT)/perf" "$(ROOT)/tests/data/guest-recording"

# The host tests' trace-cmd recording (tests/data/trace-cmd): Debian's
# trace-cmd recording the helper with userstacktrace_delay in the guest.
TRACE_KEPT := trace.dat files.txt known_stack report.txt
trace-recording: deps ## refresh tests/data/trace-cmd: Debian's trace-cmd recording of userstacktrace_delay in the guest, with the files it names
	@VMTEST_KEEP=trace-cmd $(MAKE) --no-print-directory vmtest FILTER='TraceCmd.*'
	@bash ci/judge/save-kept.sh "$(RUN_DIR)/results.log" "$(ROOT)/tests/data/trace-cmd" $(TRACE_KEPT)

stress: ## fuzz and lifecycle storms on the debug kernel + kmemleak, STRESS_S seconds: counts and verdict
	@$(MAKE) --no-print-directory stress-run CONFIG=stress

stress-kcsan: ## make stress on a KCSAN kernel (data races) + kmemleak, in build/out/<tree>/stress-kcsan
	@$(MAKE) --no-print-directory stress-run CONFIG=kcsan

stress-rt: ## make stress on PREEMPT_RT (the rt-debug kernel, kmemleak on), in build/out/<tree>/stress-rt
	@$(MAKE) --no-print-directory stress-run CONFIG=stress-rt

# The results of CONFIG=stress in stress/, of kcsan in stress-kcsan/, of
# stress-rt in stress-rt/.
stress-run: kernel initramfs
	@STRESS_ARGS="$(STRESS_ARGS)" bash ci/judge/stress.sh "$(KOBJ)" "$(INITRD)" "$(OUT)/stress$(ASFX)$(if $(filter-out stress,$(CONFIG)),-$(CONFIG:stress-%=%))" "$(SMP)" "$(STRESS_S)"

vmtest-debug: ## make vmtest on the debug kernel (KASAN, lockdep, atomic sleep)
	@$(MAKE) --no-print-directory vmtest CONFIG=debug

golden: deps tree ## refresh the evidence runs: make vmtest + vmtest-debug of build/linux, saved as tests/data/series/
	@bash ci/judge/save-golden.sh

# make mutate: MUTATE=a,b runs only those breakages of ci/checks/mutate/ (no
# doc/mutate.md then), MUTATE_FULL=1 the whole suite for each.
mutate: deps tree ## break each guarded behaviour in a worktree: its named tests must fail; table in doc/mutate.md (~30 min)
	@/usr/bin/python3 -m ci.checks.mutate run $$(echo "$(MUTATE)" | tr , ' ')

# The host tests are told what make built for this tree (KERNEL=DIR
# too); the perf cases are test-perf's alone, so make check runs them once.
test: deps selftests $(TREE_DEP) ## the harness's own tests on the host (pytest, no VM; perf's in test-perf), a short fuzz
	@VMTEST_LIB_UNITTEST="$(ST_BUILD)/lib_unittest" \
		$(PYTEST) -q tests --ignore=tests/test_perf_tools.py --ignore=tests/test_perf_convert.py
	@FUZZ_OPTIONAL=1 bash ci/checks/fuzz.sh $(FUZZ_TEST_S) "$(KSRC)"

fuzz: deps $(TREE_DEP) ## fuzz the kernel's SFrame reader on the host, FUZZ_S seconds (libFuzzer, ASan, UBSan)
	@bash ci/checks/fuzz.sh $(FUZZ_S) "$(KSRC)"

test-perf: perf perf-asan perf-upstream ## the tree's perf (and its ASan build) on crafted perf.data files, its conversions read by other profilers (host, no VM)
	@VMTEST_PERF="$(PERF_OUT)/perf" VMTEST_PERF_ASAN="$(PERF_OUT)-asan/perf" \
		VMTEST_PERF_UPSTREAM="$(PERF_UPSTREAM_OUT)/perf" \
		$(PYTEST) -q tests/test_perf_tools.py tests/test_perf_convert.py

checkpatch: deps $(TREE_DEP) ## scripts/checkpatch.pl --strict over every patch
	@bash ci/checks/checkpatch.sh "$(KSRC)"

apply-fresh: deps $(TREE_DEP) ## prove patches/ applies to a fresh, unpatched base
	@bash ci/checks/apply-fresh.sh

bisect-build: deps $(TREE_DEP) ## build every commit of the series in turn (kernel, perf)
	@bash ci/checks/bisect-build.sh "$(KSRC)" $(KCONFIG_ARGS)

# make matrix: ROWS=a,b (ci/checks/matrix.py's names, randconfig-SEED), else
# every row and RANDCONFIGS randconfig rows (default 3), their seeds drawn
# from SEED (default: today's date, so a whole table made over several days
# names one SEED to reuse its randconfig rows). A row whose tree,
# definition and harness are those of its saved result is not run again
# (FRESH=1: it is). STATUS=1 says which rows have such a result and
# which a run would build, building nothing (nor installing: no deps, no
# tree; the tree as it is).
matrix: $(if $(STATUS),,deps $(TREE_DEP)) ## build the series as build bots do: configurations x architectures, W=1 against the base (not part of check)
	@$(PYTHON) -m ci.checks.matrix --src "$(KSRC)" $(if $(ROWS),--rows $(ROWS)) $(if $(RANDCONFIGS),--randconfigs $(RANDCONFIGS)) $(if $(SEED),--seed $(SEED)) $(if $(FRESH),--fresh) $(if $(STATUS),--status)

check: ## everything CI runs: deps, tree, perf, harness tests, apply, checkpatch, export-check, vmtest x2, test-perf, short stress
	@bash ci/checks/check.sh

kunit: deps $(TREE_DEP) ## run the series' KUnit suites alone through kunit.py
	@bash ci/checks/kunit/run.sh "$(KSRC)"

kernel-doc: deps $(TREE_DEP) ## scripts/kernel-doc -none on the series' files: no new warnings
	@bash ci/checks/kernel-doc.sh "$(KSRC)"

sparse: deps $(TREE_DEP) ## sparse (C=2) on the series' files: no warning the base lacks
	@bash ci/checks/sparse.sh "$(KSRC)" "$(KOBJ)" "$(OUT)/sparse" $(KCONFIG_ARGS)

submit-check: deps $(TREE_DEP) ## every check before sending, one PASS/FAIL line each
	@bash ci/checks/submit-check.sh

# make send: V=N (else one more than the highest series-vN tag), SEND=1
# to really send, TO= and CC= (comma separated) add recipients, CHANGES=
# FILE adds notes to the cover letter's "Changes in vN". make's own CC
# (the C compiler) is not a recipient: only CC= on the command line is.
send: deps $(TREE_DEP) ## the series under your git identity, vN, recipients, send-email --dry-run (SEND=1 sends)
	@V="$(V)" SEND="$(SEND)" TO="$(TO)" \
		CC="$(if $(filter command line,$(origin CC)),$(CC))" \
		CHANGES="$(CHANGES)" RESULTS="$(OUT)" bash ci/series/send.sh "$(KSRC)" "$(BASE)"

clean: ## remove build outputs (keeps build/linux and its commits)
	rm -rf $(BUILD)/out
