"""Publishing the versions of Spark's state: a new name per publication, created only if absent.

A shared state (:mod:`~workers.executors.spark.shared`) has one writer at a time, chosen by
Kafka (the owner of the queries topic's partition 0) — but a writer paused past its session
timeout (a zombie) still believes it writes when it resumes.  Reading the manifest back
before replacing it cannot stop it: the check and the write are two steps, and the zombie
may be paused between them.  So publishing is one step the storage decides: each
publication is a **new file, created only if no file has its name** (``docs/spark.md``,
"Publishing is a conditional write"):

1. publications are numbered: the file ``manifests/<n>.json`` (``n`` zero-padded) holds the
   ``n``-th manifest, whatever its epoch or version (a restamp or a compaction publishes
   the same version anew);
2. a writer publishes only the successor of the publication it last wrote or took up:
   ``n + 1``, created if absent (:func:`create_if_absent`) — a local directory's hard
   link, an object store's ``If-None-Match: *`` (S3) or ``ifGenerationMatch=0`` (GCS).
   Of two writers publishing after ``n``, exactly one creates ``n + 1``; the other's
   create fails, and it stops writing;
3. a writer taking the state over (a follower leading, a writer starting on a shared state)
   publishes the version it took up as its successor at once — the claim: a zombie
   resumed after it creates a name that exists, and fails;
4. readers take the greatest number present (:func:`newest`): ``manifests/`` is listed,
   never trusted to hold one file;
5. after a publication its writer deletes the smaller numbers (readers want the newest;
   tasks are shipped their manifest).  A zombie whose successor was deleted creates it
   anew — below the greatest, where no reader looks — then lists, sees a greater one,
   deletes its own and stops (:func:`publish`);
6. the files of a tick are named by its version, which a zombie may write after the writer
   after it did: they are created only if absent too (:func:`link_if_absent`), so a zombie
   overwrites no published file — it finds the name taken and stops — and a file it wrote
   first, never published, gives way to the writer's
   (:meth:`~workers.executors.spark.state.StateStore.append`).

A ``pyarrow.fs`` object store has no conditional create in its API: there a writer checks
that the name is absent before writing it, two steps again (the gap ``docs/spark.md``
names).  A local directory (or ``file://``) is the one where the create is atomic.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid

import pyarrow.fs as pafs

MANIFESTS = "manifests"  # the directory of the publications, under the state's location
# The one manifest a location had before publications were numbered (replaced in place): read
# while nothing is published yet, so that a state written then is taken up, not started anew.
LEGACY_MANIFEST = "manifest.json"
_NAME = re.compile(r"^(\d+)\.json$")
_READS = 10  # a reader lists again when the newest went meanwhile: this many times


def manifest_name(serial: int) -> str:
    """The file of publication ``serial``, zero-padded (listed in order, too)."""
    return f"{MANIFESTS}/{serial:020d}.json"


def serials(fs: pafs.FileSystem, root: str) -> list[int]:
    """The numbers of the publications present, in order."""
    infos = fs.get_file_info(pafs.FileSelector(f"{root}/{MANIFESTS}", allow_not_found=True))
    return sorted(int(found.group(1)) for info in infos
                  if (found := _NAME.match(info.base_name)))


def newest(fs: pafs.FileSystem, root: str) -> tuple[int, str] | None:
    """The greatest publication present and its text (None: nothing published yet).  A
    writer may delete it between the listing and the read (it published a newer one): the
    reader lists again."""
    for _ in range(_READS):
        present = serials(fs, root)
        if not present:
            return _legacy(fs, root)
        with (contextlib.suppress(FileNotFoundError),
              fs.open_input_stream(f"{root}/{manifest_name(present[-1])}") as source):
            return present[-1], source.read().decode()
    raise FileNotFoundError(f"{root}/{MANIFESTS}: the newest publication went {_READS} "
                            "times in a row")


def _legacy(fs: pafs.FileSystem, root: str) -> tuple[int, str] | None:
    """A location's manifest from before the numbered publications, as publication -1 (its
    taker-over publishes it anew as 0), or None."""
    try:
        with fs.open_input_stream(f"{root}/{LEGACY_MANIFEST}") as source:
            return -1, source.read().decode()
    except FileNotFoundError:
        return None


def create_if_absent(fs: pafs.FileSystem, path: str, text: str) -> bool:
    """Write ``text`` as the file ``path`` unless it exists; whether this call created it.
    Written aside first, then named (:func:`link_if_absent`): the file is whole when it
    appears."""
    directory = path.rsplit("/", 1)[0]
    fs.create_dir(directory, recursive=True)
    aside = f"{directory}/.aside-{uuid.uuid4().hex[:8]}"
    with fs.open_output_stream(aside) as sink:
        sink.write(text.encode())
    try:
        return link_if_absent(fs, aside, path)
    finally:
        fs.delete_file(aside)


def link_if_absent(fs: pafs.FileSystem, source: str, path: str) -> bool:
    """Give the whole file ``source`` the name ``path`` too, unless a file has it; whether
    this call did.  Locally, atomic: a hard link (``link`` fails on an existing name).
    Elsewhere (an object store through ``pyarrow.fs``, which exposes no precondition),
    checked first, then copied: not atomic (see the module's docstring)."""
    if isinstance(fs, pafs.LocalFileSystem):
        try:
            os.link(source, path)
        except FileExistsError:
            return False
        return True
    if fs.get_file_info(path).type != pafs.FileType.NotFound:
        return False
    fs.copy_file(source, path)
    return True


def publish(fs: pafs.FileSystem, root: str, serial: int, text: str) -> bool:
    """Publish ``text`` as publication ``serial`` (steps 2 and 5 of the module's docstring):
    whether it is now the newest.  False: another writer published ``serial`` or later —
    nothing of this call stays."""
    path = f"{root}/{manifest_name(serial)}"
    if not create_if_absent(fs, path, text):
        return False
    present = serials(fs, root)
    if present and present[-1] > serial:  # a deleted name created anew: below the newest
        fs.delete_file(path)
        return False
    for older in present:
        if older < serial:
            with contextlib.suppress(FileNotFoundError):
                fs.delete_file(f"{root}/{manifest_name(older)}")
    return True
