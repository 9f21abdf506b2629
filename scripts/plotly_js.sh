#!/usr/bin/env bash
# Fetches the report's chart library: plotly.js's "cartesian" bundle (scatter,
# bar, box, heatmap and a few more; 1.5 MB against the full bundle's 4.8 MB),
# the minified build that plotly.js itself publishes on npm as
# plotly.js-cartesian-dist-min. No PyPI or Debian package carries a partial
# bundle (the plotly Python package ships only the full one), so it comes from
# npm, pinned: the version is the plotly.js the plotly package carries (a test
# checks they agree) and the tarball must match the pinned sha512.
#   scripts/plotly_js.sh VERSION SHA512-HEX DEST   (DEST: the .js; its LICENSE beside it)
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: scripts/plotly_js.sh VERSION SHA512-HEX DEST" >&2; exit 2; }
version=$1 sha=$2 dest=$3
package=plotly.js-cartesian-dist-min

# Any npm will do (a Node.js install may bring its own); else Debian's.
command -v npm > /dev/null || "$(dirname "$0")/deps.sh" report
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$package@$version" > /dev/null)
tarball="$tmp/$package-$version.tgz"
got=$(sha512sum "$tarball" | cut -d" " -f1)
if [[ "$got" != "$sha" ]]; then
  echo "plotly_js.sh: $package@$version has sha512 $got, not the pinned $sha; refusing it" >&2
  exit 1
fi
tar -xzf "$tarball" -C "$tmp" package/plotly-cartesian.min.js package/LICENSE
mkdir -p "$(dirname "$dest")"
cp "$tmp/package/LICENSE" "$(dirname "$dest")/plotly.js-LICENSE"
cp "$tmp/package/plotly-cartesian.min.js" "$dest.tmp"
mv "$dest.tmp" "$dest"
echo "plotly_js.sh: $package@$version -> $dest"
