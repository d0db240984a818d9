#!/usr/bin/env bash
# test/upgrade/released.sh: the SQL scripts of released versions are never
# changed again.  Users who installed a release have its objects; the
# update scripts that follow it assume exactly those, and the upgrade test
# (test/upgrade/) builds each release's objects from the scripts in this
# tree — so an edit to a released script would both break real upgrades
# and go unseen by that test.  test/upgrade/released.sha256 holds the
# checksum of each released script as its release shipped it (0.1's
# install script, unchanged since; 0.2's update script at tag v0.2.0).
# Prints one "ok"/"not ok" line per script.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
status=0
while read -r sum file; do
	if [ "$(sha256sum "$root/$file" | cut -d' ' -f1)" = "$sum" ]; then
		echo "ok - $file is as released"
	else
		echo "not ok - $file changed since it was released: changes to SQL objects go into the next version's update script"
		status=1
	fi
done <"$root/test/upgrade/released.sha256"
exit $status
