# shellcheck shell=bash
# A Python virtualenv for the test bed's helper scripts (scripts/lib/avro-consume).
# Source after common.sh (deps.sh too, if a missing python3-venv may be installed).
#
#   sluice_pyvenv         create it once, with the pinned packages of
#                         scripts/lib/python-requirements.txt from PyPI only;
#                         sets SLUICE_PYVENV (its folder; the interpreter is
#                         $SLUICE_PYVENV/bin/python)
#   sluice_pyvenv_ready   it exists and is complete (sets SLUICE_PYVENV)
#
# The virtualenv lives in the download cache, named by a hash of the
# requirements file and the interpreter, so a change of either builds a new one.
# Interpreter: SLUICE_PYTHON, else python3.11, else python3 (3.10 or newer).

SLUICE_PY_REQUIREMENTS="$SLUICE_LIB/python-requirements.txt"

# _sluice_python: set SLUICE_PY to the interpreter and SLUICE_PY_KEY to what
# identifies it (version and installation prefix).
_sluice_python() {
    [[ -n ${SLUICE_PY:-} ]] && return 0
    local c info tried=()
    for c in ${SLUICE_PYTHON:-} python3.11 python3; do
        command -v "$c" >/dev/null 2>&1 || continue
        info=$("$c" -c 'import sys; print("%d.%d" % sys.version_info[:2], sys.version.split()[0], sys.base_prefix)' 2>/dev/null || true)
        tried+=("$c (${info%% *})")
        case ${info%% *} in
            3.1[0-9] | 3.[2-9][0-9])
                SLUICE_PY=$(command -v "$c")
                SLUICE_PY_KEY=${info#* }
                return 0
                ;;
        esac
        [[ -n ${SLUICE_PYTHON:-} ]] && break
    done
    die "python 3.10+ not found for the test-bed virtualenv (tried: ${tried[*]:-${SLUICE_PYTHON:-python3.11 python3}})"
}

# _sluice_pyvenv_key: call _sluice_python first (in this shell, not a subshell).
_sluice_pyvenv_key() {
    printf '%s\n%s\n' "$SLUICE_PY_KEY" "$(sha256sum "$SLUICE_PY_REQUIREMENTS" | cut -c1-64)"
}

sluice_pyvenv_ready() {
    local key
    _sluice_python
    key=$(_sluice_pyvenv_key)
    SLUICE_PYVENV="$CACHE_DIR/pyvenv-$(printf '%s' "$key" | sha256sum | cut -c1-12)"
    [[ -x $SLUICE_PYVENV/bin/python && -f $SLUICE_PYVENV/.sluice-complete \
        && $(cat "$SLUICE_PYVENV/.sluice-complete" 2>/dev/null) == "$key" ]]
}

sluice_pyvenv() {
    sluice_pyvenv_ready && return 0
    local key log="$SLUICE_PYVENV.log"
    key=$(_sluice_pyvenv_key)   # _sluice_python ran in sluice_pyvenv_ready
    say "python: creating $SLUICE_PYVENV ($SLUICE_PY ${SLUICE_PY_KEY%% *}, packages of $(rel "$SLUICE_PY_REQUIREMENTS") from PyPI)"
    mkdir -p "$CACHE_DIR"
    rm -rf "$SLUICE_PYVENV"
    if ! "$SLUICE_PY" -m venv "$SLUICE_PYVENV" >"$log" 2>&1; then
        # Debian's own python3 ships venv/ensurepip separately.
        if [[ $SLUICE_PY == /usr/bin/* ]] && declare -F ensure_apt_packages >/dev/null; then
            rm -rf "$SLUICE_PYVENV"
            ensure_apt_packages python3-venv
            "$SLUICE_PY" -m venv "$SLUICE_PYVENV" >>"$log" 2>&1 \
                || fail_with_log "$log" "python: $SLUICE_PY -m venv failed"
        else
            fail_with_log "$log" "python: $SLUICE_PY -m venv failed (Debian's python3 needs python3-venv)"
        fi
    fi
    # --isolated: ignore PIP_* variables and user config (find-links, extra
    # indexes), so that PyPI is the only source.
    if ! "$SLUICE_PYVENV/bin/python" -m pip --isolated install --disable-pip-version-check --no-input \
        --index-url https://pypi.org/simple -r "$SLUICE_PY_REQUIREMENTS" </dev/null >>"$log" 2>&1; then
        rm -rf "$SLUICE_PYVENV"
        fail_with_log "$log" "python: pip could not install the pinned packages of $(rel "$SLUICE_PY_REQUIREMENTS") from PyPI"
    fi
    if ! "$SLUICE_PYVENV/bin/python" -c 'from confluent_kafka.schema_registry.avro import AvroDeserializer' >>"$log" 2>&1; then
        rm -rf "$SLUICE_PYVENV"
        fail_with_log "$log" "python: confluent_kafka's AvroDeserializer does not import after installing $(rel "$SLUICE_PY_REQUIREMENTS")"
    fi
    printf '%s' "$key" >"$SLUICE_PYVENV/.sluice-complete"
    say "python: virtualenv ready ($("$SLUICE_PYVENV/bin/python" -c 'import confluent_kafka as c; print("confluent-kafka", c.__version__, "with librdkafka", c.libversion()[0])'))"
}
