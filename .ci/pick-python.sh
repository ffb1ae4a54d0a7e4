#!/bin/sh
# Which Python `make setup` builds .venv with, and what becomes of an existing .venv.
#
#   sh .ci/pick-python.sh VENV PYTHON VERSION...     e.g.  sh .ci/pick-python.sh .venv '' 3.11 3.12 3.13
#
# PYTHON is `make setup PYTHON=...` (may be empty: then the first of python3.<newest VERSION> ...
# python3.<oldest VERSION>, then python3, that runs and is one of the VERSIONs). Changes nothing;
# prints one line for the Makefile:
#   refuse MESSAGE            no supported interpreter: nothing may be created
#   create PYTHON             no VENV yet
#   keep PYTHON               VENV was built by that interpreter
#   rebuild PYTHON MESSAGE    VENV was built by another one (other version or executable), or is broken
# An interpreter is its major.minor version and the real path of its base executable (a venv's
# python reports its base interpreter's), as answered by QUERY below.

venv=$1
python=$2
shift 2
versions=$*
for newest in $versions; do :; done
range="$1 to $newest"

QUERY='import os, sys; print("%d.%d %s" % (sys.version_info[0], sys.version_info[1], os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)))'

# Prints "X.Y /real/path/of/the/base/executable", or nothing if $1 does not run as a Python.
probe() {
    answer=$("$1" -c "$QUERY" 2>/dev/null) || return 0
    case $answer in
        [0-9]*.[0-9]*" "/*) printf '%s\n' "$answer" ;;
    esac
}

supported() {
    case " $versions " in *" $1 "*) return 0 ;; esac
    return 1
}

chosen=
if [ -n "$python" ]; then
    id=$(probe "$python")
    if [ -z "$id" ]; then
        echo "refuse PYTHON=$python: not found or not a runnable Python; flyte-apps supports Python $range"
        exit 0
    fi
    if ! supported "${id%% *}"; then
        echo "refuse PYTHON=$python is Python ${id%% *}; flyte-apps supports Python $range"
        exit 0
    fi
    chosen=$python
else
    candidates=
    for v in $versions; do candidates="python$v $candidates"; done
    tried=
    for candidate in $candidates python3; do
        id=$(probe "$candidate")
        if [ -n "$id" ] && supported "${id%% *}"; then
            chosen=$candidate
            break
        fi
        if [ -n "$id" ]; then found="is Python ${id%% *}"; else found="not found"; fi
        tried="$tried${tried:+, }$candidate $found"
    done
    if [ -z "$chosen" ]; then
        echo "refuse no supported Python ($tried); flyte-apps supports Python $range: make setup PYTHON=/path/to/python3.X"
        exit 0
    fi
fi

if [ ! -e "$venv" ]; then
    echo "create $chosen"
    exit 0
fi
built=
[ -f "$venv/pyvenv.cfg" ] && built=$(probe "$venv/bin/python")
if [ "$built" = "$id" ]; then
    echo "keep $chosen"
elif [ -z "$built" ]; then
    echo "rebuild $chosen $venv is not a working virtualenv; rebuilding it with $chosen (Python ${id%% *}, ${id#* })"
else
    echo "rebuild $chosen $venv was built by Python ${built%% *} (${built#* }); rebuilding it with $chosen (Python ${id%% *}, ${id#* })"
fi
