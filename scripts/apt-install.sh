# Sourced by the setup scripts: strata_apt_install LABEL PACKAGE... installs
# the Debian packages of the list that are missing (sudo when not root),
# unless STRATA_SKIP_APT=1. Sets SUDO for the caller's other root commands.
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
strata_apt_install() {
  local label=$1
  shift
  [[ "${STRATA_SKIP_APT:-0}" == "1" ]] && return 0
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "$label: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
