"""Image operations through the Python docker SDK (the `docker` package),
run by PythonSDKSuite against wharfd: pull, list, inspect, history, tag,
save, remove, load, prune and df, each checked here; a JSON summary on
stdout for the Go side to compare with what it knows.

Environment: DOCKER_HOST (unix://…), WHARF_TEST_API ("auto" or a version to
pin), WHARF_TEST_IMAGE (registry/repo), WHARF_TEST_TAG, WHARF_TEST_ID (the
image ID the registry fixture has), WHARF_TEST_PREFIX (local names).
"""
import io
import json
import os
import sys
import tarfile

import docker
import docker.utils
from docker.errors import ImageNotFound, NotFound


def check(cond, what):
    if not cond:
        print("FAILED: " + what, file=sys.stderr)
        sys.exit(1)


env = os.environ
image, tag, want_id = env["WHARF_TEST_IMAGE"], env["WHARF_TEST_TAG"], env["WHARF_TEST_ID"]
prefix = env["WHARF_TEST_PREFIX"]
client = docker.DockerClient(base_url=env["DOCKER_HOST"], version=env.get("WHARF_TEST_API", "auto"), timeout=60)
out = {"sdk": docker.__version__, "api": client.api.api_version}

check(client.ping() is True, "ping")
out["server_api"] = client.version()["ApiVersion"]

# pull
img = client.images.pull(image, tag=tag)
check(img.id == want_id, "pull: id %s, want %s" % (img.id, want_id))
name = "%s:%s" % (image, tag)
check(name in img.tags, "pull: tags %s lack %s" % (img.tags, name))

# list, with and without a name
ids = [i.id for i in client.images.list()]
check(want_id in ids, "list: %s not in %s" % (want_id, ids))
named = client.images.list(name=image)
check([i.id for i in named] == [want_id], "list name=%s: %s" % (image, named))

# inspect, the model and the low-level call
got = client.images.get(name)
check(got.id == want_id, "get: %s" % got.id)
check(got.labels.get("via") == "python", "labels: %s" % got.labels)
raw = client.api.inspect_image(name)
check(raw["Id"] == want_id and raw["Os"] == "linux", "inspect_image: %s" % raw)
check(isinstance(raw["RootFS"]["Layers"], list) and raw["RootFS"]["Layers"], "RootFS: %s" % raw["RootFS"])
out["layers"] = raw["RootFS"]["Layers"]

# history
hist = got.history()
check(isinstance(hist, list) and len(hist) >= 1, "history: %s" % hist)

# tag
check(got.tag(prefix + "/tagged", "2") is True, "tag")
check(client.images.get(prefix + "/tagged:2").id == want_id, "tagged id")

# save (named: the tar names the tags)
data = b"".join(got.save(named=True))
with tarfile.open(fileobj=io.BytesIO(data)) as tf:
    names = tf.getnames()
    manifest = json.load(tf.extractfile("manifest.json"))
check(manifest[0]["RepoTags"] == [name], "save: manifest.json %s" % manifest)
out["save_entries"] = len(names)

# remove: untag, then delete
res = client.api.remove_image(prefix + "/tagged:2")
check(res == [{"Untagged": prefix + "/tagged:2"}], "remove tag: %s" % res)
client.images.remove(name)
try:
    client.images.get(name)
    check(False, "get after remove succeeded")
except ImageNotFound as e:
    out["not_found"] = e.explanation

# load the saved tar back
loaded = client.images.load(data)
check([i.id for i in loaded] == [want_id], "load: %s" % loaded)
check(name in client.images.get(name).tags, "load: tag back")

# prune (nothing dangling) and df: the SDK offers them from API 1.25
if docker.utils.version_gte(client.api.api_version, "1.25"):
    pr = client.images.prune(filters={"dangling": True})
    check("SpaceReclaimed" in pr, "prune: %s" % pr)
    df = client.df()
    check(df.get("BuilderSize") == 0, "df: BuilderSize %s" % df.get("BuilderSize"))
    check(any(i["Id"] == want_id for i in df["Images"]), "df: images")
    out["df"] = True

# a name that does not exist
try:
    client.images.get(prefix + "/nosuch:1")
    check(False, "get nosuch succeeded")
except NotFound:
    pass

client.close()
print(json.dumps(out))
