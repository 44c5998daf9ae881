#!/bin/sh
# robotrain's network commands end to end through the CLI, against the loopback stand-ins of
# the Hub (tests/servers/hub-server.py) and of W&B (tests/servers/wandb-server.py) on 127.0.0.1:
# a dataset trained on by Hub id alone, then again offline with the server gone; robotrain
# dataset download; backbone weights by Hub id; --policy.push_to_hub at the end of training and
# robotrain push, with the commit payload checked field by field; --wandb.* streaming every
# metric line once, resume with the same run, offline mode and robotrain wandb sync; the checkpoints'
# "model" artifacts (name, type, aliases, files with their MD5 and size; none with
# --wandb.disable_artifact; a refused upload is a warning and training goes on).
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
R=$ROBOTRAIN
S="$ROBOTRAIN_TEST_SRCDIR/servers"
data="$ROBOTRAIN_TEST_SRCDIR/data/dataset/tiny-v3"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is needed for the loopback servers"
[ -f "$data/meta/info.json" ] || skip_all "no tiny-v3 dataset"
small="--policy.type=act --policy.pretrained_backbone_weights=null --policy.dim_model=32 --policy.n_heads=2
  --policy.dim_feedforward=64 --policy.n_encoder_layers=1 --policy.n_vae_encoder_layers=1 --policy.chunk_size=5
  --policy.n_action_steps=5 --policy.latent_dim=4 --policy.device=cpu --batch_size=2 --num_workers=0"
# nothing of the caller's environment may send us to the real services
unset HF_HUB_OFFLINE TRANSFORMERS_OFFLINE HF_TOKEN HUGGING_FACE_HUB_TOKEN HF_HUB_CACHE HUGGINGFACE_HUB_CACHE \
  HF_LEROBOT_HOME WANDB_MODE WANDB_PROJECT WANDB_ENTITY WANDB_RUN_ID RANK WORLD_SIZE
export HF_HOME="$T/hf" HF_TOKEN=hf_test_token NETRC="$T/no-netrc"
SHA=1111111111111111111111111111111111111111

# a safetensors file holding only conv1.weight (float32 [1]): a backbone that is not complete
mkdir -p "$T/backbone"
python3 - "$T/backbone/model.safetensors" <<'EOF'
import json, struct, sys
header = json.dumps({"conv1.weight": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + struct.pack("<f", 1.0))
EOF
# the real v2.1 episode (when ../shared is there), with a decoy file of episode 30 beside it
real="${ROBOTRAIN_SHARED_DIR:-/nonexistent}/data/real-v2.1-g1"
real_repo=
if [ -d "$real" ]; then
  cp -r "$real" "$T/real" && chmod -R u+w "$T/real" &&
    echo "not this one" >"$T/real/data/chunk-000/episode_000030.parquet" &&
    for cam in "$T"/real/videos/chunk-000/*; do echo "not this one" >"$cam/episode_000030.mp4"; done
  real_repo='{"type": "dataset", "id": "lerobot-test/real", "commits": [{"sha": "4444444444444444444444444444444444444444",
    "dir": "'"$T/real"'"}], "branches": {"main": "4444444444444444444444444444444444444444"},
    "tags": {"v2.1": "4444444444444444444444444444444444444444"}},'
fi
cat >"$T/hub.json" <<EOF
{"tokens": ["hf_test_token"], "lfs_patterns": ["*.safetensors", "*.parquet", "*.mp4"],
 "repos": [$real_repo
           {"type": "dataset", "id": "lerobot-test/tiny",
            "commits": [{"sha": "$SHA", "dir": "$data"}],
            "branches": {"main": "$SHA"}, "tags": {"v3.0": "$SHA"}},
           {"type": "dataset", "id": "lerobot-test/private", "private": true,
            "commits": [{"sha": "$SHA", "dir": "$data"}], "branches": {"main": "$SHA"}, "tags": {"v3.0": "$SHA"}},
           {"type": "model", "id": "timm/resnet18.tv_in1k",
            "commits": [{"sha": "2222222222222222222222222222222222222222", "dir": "$T/backbone"}],
            "branches": {"main": "2222222222222222222222222222222222222222"}}]}
EOF

# start_hub: the Hub stand-in in the background; HF_ENDPOINT points at it
start_hub() {
  rm -f "$T/hub.ports"
  python3 "$S/hub-server.py" --config "$T/hub.json" --log "$T/hub.log" --port-file "$T/hub.ports" &
  hub_pid=$!
  i=0
  while [ ! -s "$T/hub.ports" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  HF_ENDPOINT="http://127.0.0.1:$(cut -d' ' -f1 "$T/hub.ports")"
  export HF_ENDPOINT
}
# requests "METHOD path-regex" in the Hub log
hub_requests() {
  python3 - "$T/hub.log" "$1" "$2" <<'EOF'
import json, re, sys
n = sum(1 for l in open(sys.argv[1]) if l.strip() and json.loads(l)["method"] == sys.argv[2]
        and re.search(sys.argv[3], json.loads(l)["path"]))
print(n)
EOF
}
start_hub
[ -n "$HF_ENDPOINT" ] && [ -s "$T/hub.ports" ]
tap_result $? "the Hub stand-in starts"

# ---- a dataset by Hub id alone
snap="$HF_HOME/lerobot/hub/datasets--lerobot-test--tiny/snapshots/$SHA"
# shellcheck disable=SC2086 # the argument lists are word lists on purpose
ok_run "train by --dataset.repo_id alone: downloads and trains" "$R" train --dataset.repo_id=lerobot-test/tiny \
  $small --policy.push_to_hub=false --steps=2 --log_freq=1 "--output_dir=$T/t1"
contains "names the downloaded folder" "$T/out" "Dataset lerobot-test/tiny: $snap"
contains "trained" "$T/out" "End of training"
cmp -s "$data/data/chunk-000/file-000.parquet" "$snap/data/chunk-000/file-000.parquet" &&
  cmp -s "$data/videos/observation.images.cam/chunk-000/file-000.mp4" \
    "$snap/videos/observation.images.cam/chunk-000/file-000.mp4"
tap_result $? "LeRobot's cache layout: snapshots/<commit> holds the files, identical"
[ -L "$snap/meta/info.json" ] && [ "$(cat "$HF_HOME/lerobot/hub/datasets--lerobot-test--tiny/refs/v3.0")" = "$SHA" ]
tap_result $? "LeRobot's cache layout: snapshot symlinks and refs/v3.0 = the commit"
[ "$(hub_requests GET '^/api/datasets/lerobot-test/tiny/refs')" -ge 1 ]
tap_result $? "the version tag is picked from the Hub's refs, as LeRobot does"

# shellcheck disable=SC2086
HF_HOME="$T/hf-episodes" ok_run "train --dataset.episodes=[1] by Hub id: metadata, then that episode's files" \
  "$R" train --dataset.repo_id=lerobot-test/tiny --dataset.episodes=[1] $small --policy.push_to_hub=false --steps=1 \
  "--output_dir=$T/t-episodes"
contains "--dataset.episodes: one episode" "$T/out" "dataset.num_episodes=1"
ok_run "dataset download REPO_ID: from the cache" "$R" dataset download lerobot-test/tiny
[ "$(cat "$T/out")" = "$snap" ]
tap_result $? "dataset download prints the snapshot folder"
ok_run "dataset download --root: a local folder" "$R" dataset download lerobot-test/tiny --revision=main \
  "--root=$T/root"
cmp -s "$data/meta/info.json" "$T/root/meta/info.json" && [ -f "$T/root/.cache/huggingface/download/meta/info.json.metadata" ]
tap_result $? "--root: the files at ROOT/<path>, with huggingface_hub's bookkeeping"
fail_run 1 "dataset download: a dataset the Hub does not have" "$R" dataset download lerobot-test/nosuch
contains "404 names the repository" "$T/err" "lerobot-test/nosuch"
fail_run 2 "dataset download: a malformed repo id" "$R" dataset download "bad//id"
if [ -n "$real_repo" ]; then
  ok_run "dataset download --episodes=[29]: the metadata, then that episode's files" "$R" dataset download \
    lerobot-test/real --episodes=[29]
  folder=$(cat "$T/out")
  cmp -s "$real/data/chunk-000/episode_000029.parquet" "$folder/data/chunk-000/episode_000029.parquet" &&
    cmp -s "$real/meta/episodes.jsonl" "$folder/meta/episodes.jsonl" &&
    [ "$(hub_requests HEAD '^/datasets/lerobot-test/real/resolve/.*episode_000029')" -eq 2 ] &&
    [ "$(hub_requests HEAD 'episode_000030')" -eq 0 ] && [ "$(hub_requests GET 'episode_000030')" -eq 0 ] &&
    [ ! -e "$folder/data/chunk-000/episode_000030.parquet" ]
  tap_result $? "--episodes: episode 29's data and video fetched, episode 30's not, v2.1 picked"
  ok_run "robotrain dataset info reads the partial download" "$R" dataset info "$folder"
  contains "partial download: all 100 episodes listed" "$T/out" "100"
else
  tap_result 0 "# SKIP no ../shared/data/real-v2.1-g1 for --episodes"
fi

# the Hub's failures: a private dataset without a token, 500s retried, a cut-off body resumed
faults() {
  python3 - "$HF_ENDPOINT/_control/faults" "$1" <<'EOF'
import sys, urllib.request
urllib.request.urlopen(urllib.request.Request(sys.argv[1], sys.argv[2].encode(), method="POST")).read()
EOF
}
HF_TOKEN= HF_HOME="$T/hf-private" fail_run 1 "a private dataset without a token" "$R" dataset download \
  lerobot-test/private
contains "401: says to set a token" "$T/err" "HF_TOKEN"
ok_run "... and with the token" env HF_HOME="$T/hf-private" "$R" dataset download lerobot-test/private
faults '[{"match": "^GET /api/datasets/lerobot-test/tiny/refs", "times": 2, "status": 500, "headers": {"Retry-After": "0"}},
         {"match": "^GET /datasets/lerobot-test/tiny/resolve/.*/meta/stats.json", "times": 1, "drop_after": 1000}]'
HF_HOME="$T/hf-faults" ok_run "two 500s, then the answer; a body cut off after 1000 bytes" "$R" dataset download \
  lerobot-test/tiny
cmp -s "$data/meta/stats.json" "$T/hf-faults/lerobot/hub/datasets--lerobot-test--tiny/snapshots/$SHA/meta/stats.json"
tap_result $? "... the file is whole"
python3 - "$T/hub.log" <<'EOF'
import json, sys
log = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
refs = [e["status"] for e in log if e["path"].startswith("/api/datasets/lerobot-test/tiny/refs")]
ranges = [e["headers"].get("range") for e in log if e["method"] == "GET" and e["path"].endswith("/meta/stats.json")]
ok = refs[-3:] == [500, 500, 200] and "bytes=1000-" in ranges
print("# refs %r, stats.json ranges %r" % (refs[-3:], ranges))
sys.exit(0 if ok else 1)
EOF
tap_result $? "... retried after the 500s, and resumed with Range: bytes=1000-"

# ---- backbone weights by Hub id: downloaded into HF_HUB_CACHE, then read
# shellcheck disable=SC2086
fail_run 1 "--policy.pretrained_backbone_weights=HUB_ID: downloaded and read" "$R" train \
  --dataset.repo_id=lerobot-test/tiny $small --policy.pretrained_backbone_weights=timm/resnet18.tv_in1k \
  --policy.push_to_hub=false --steps=1 "--output_dir=$T/bb"
contains "the downloaded file was read (its conv1.weight is not a ResNet's)" "$T/err" "tensor 'conv1.weight' has shape [1]"
[ -L "$HF_HOME/hub/models--timm--resnet18.tv_in1k/snapshots/2222222222222222222222222222222222222222/model.safetensors" ]
tap_result $? "the backbone file is in the Hub cache"
# shellcheck disable=SC2086
HF_HUB_OFFLINE=1 HF_HOME="$T/empty-hf" fail_run 1 "LeRobot's default backbone offline without a cached copy" "$R" \
  train --dataset.repo_id=lerobot-test/tiny "--dataset.root=$data" $small \
  --policy.pretrained_backbone_weights=ResNet18_Weights.IMAGENET1K_V1 --policy.push_to_hub=false --steps=1 \
  "--output_dir=$T/bb2"
contains "says which repository holds it" "$T/err" "timm/resnet18.tv_in1k"
contains "says how to get it or to pass null" "$T/err" "or pass null (none)"

# ---- push at the end of training, then robotrain push
# shellcheck disable=SC2086
ok_run "train --policy.push_to_hub=true pushes at the end" "$R" train --dataset.repo_id=lerobot-test/tiny $small \
  --policy.repo_id=user/act-tiny --policy.tags=tiny,test --policy.license=mit --steps=2 "--output_dir=$T/p1"
contains "says where it went" "$T/out" "Pushed the policy to $HF_ENDPOINT/user/act-tiny"
pm="$T/p1/checkpoints/last/pretrained_model"
# check_commit REPO FOLDER PRIVATE LICENSE TAGS...: the commit payload, field by field
check_commit() {
  python3 - "$T/hub.log" "$@" <<'EOF'
import base64, hashlib, json, os, sys
log, repo, folder, private, license = sys.argv[1:6]
tags = sys.argv[6:]
entries = [json.loads(l) for l in open(log) if l.strip()]
owner, name = repo.split("/")
def fail(msg):
    print("# " + msg)
    sys.exit(1)
creates = [json.loads(base64.b64decode(e["body_b64"])) for e in entries
           if e["method"] == "POST" and e["path"] == "/api/repos/create"]
want = {"name": name, "organization": owner, "visibility": "private" if private == "true" else "public"}
if not any(all(c.get(k) == v for k, v in want.items()) for c in creates):
    fail("no create request %r among %r" % (want, creates))
commits = [e for e in entries if e["method"] == "POST" and e["path"] == "/api/models/%s/commit/main" % repo]
if len(commits) != 1:
    fail("%d commits" % len(commits))
c = commits[0]
if c["headers"].get("content-type") != "application/x-ndjson" or c["status"] != 200:
    fail("commit: %r %r" % (c["headers"].get("content-type"), c["status"]))
lines = [json.loads(l) for l in base64.b64decode(c["body_b64"]).decode().splitlines() if l.strip()]
if lines[0]["key"] != "header" or lines[0]["value"]["summary"] != "Upload policy weights, train config and readme":
    fail("header %r" % lines[0])
got = {l["value"]["path"]: l for l in lines[1:]}
names = sorted(n for n in os.listdir(folder) if n.endswith((".json", ".safetensors", ".yaml", ".md")))
if sorted(got) != sorted(names + ["README.md"]):
    fail("files %r, expected %r" % (sorted(got), names + ["README.md"]))
for n in names:
    data = open(os.path.join(folder, n), "rb").read()
    l = got[n]
    if n.endswith(".safetensors"):
        v = l["value"]
        if l["key"] != "lfsFile" or v["algo"] != "sha256" or v["oid"] != hashlib.sha256(data).hexdigest() \
                or v["size"] != len(data):
            fail("%s: %r" % (n, l))
    elif l["key"] != "file" or l["value"]["encoding"] != "base64" or base64.b64decode(l["value"]["content"]) != data:
        fail("%s: not the file's bytes" % n)
card = base64.b64decode(got["README.md"]["value"]["content"]).decode()
meta = card.split("---\n")[1]
for want in ["datasets: lerobot-test/tiny", "library_name: lerobot", "license: " + license, "model_name: act",
             "pipeline_tag: robotics", "- robotics", "- lerobot", "- act"] + ["- " + t for t in tags]:
    if want not in meta.splitlines():
        fail("model card metadata lacks %r:\n%s" % (want, meta))
EOF
}
check_commit user/act-tiny "$pm" false mit tiny test
tap_result $? "push at the end: create, then one commit of the pretrained_model files and the model card"
curl_file() {
  python3 - "$HF_ENDPOINT/_control/file?type=model&repo=$1&rev=main&path=$2" "$3" <<'EOF'
import sys, urllib.request
data = urllib.request.urlopen(sys.argv[1]).read()
sys.exit(0 if data == open(sys.argv[2], "rb").read() else 1)
EOF
}
curl_file user/act-tiny model.safetensors "$pm/model.safetensors"
tap_result $? "the Hub holds model.safetensors as trained (through LFS)"

ok_run "robotrain push DIR REPO_ID (an output folder)" "$R" push "$T/p1" user/act-again --private=true \
  --tags=again --license=bsd-3-clause
contains "push: says what it did" "$T/out" "Pushed $pm to $HF_ENDPOINT/user/act-again"
check_commit user/act-again "$pm" true bsd-3-clause again
tap_result $? "robotrain push: private repository, flags in the card, the same payload"
ok_run "robotrain push again: an existing repository is fine" "$R" push "$pm" user/act-again
fail_run 1 "robotrain push: a folder without a policy" "$R" push "$T" user/x
contains "push: names the folder" "$T/err" "$T holds no policy"
fail_run 2 "robotrain push: one argument" "$R" push "$pm"
HF_TOKEN= fail_run 1 "robotrain push without a token" "$R" push "$pm" user/act-notoken
contains "push: the 401 says to set a token" "$T/err" "HF_TOKEN"

# ---- a terminal gets a progress line; other ranks than 0 never talk to the Hub
if command -v script >/dev/null 2>&1; then
  script -qec "'$R' dataset download lerobot-test/tiny '--root=$T/tty-root'" "$T/typescript" >/dev/null 2>&1
  grep -a -q "Fetching [0-9]*/[0-9]* .*meta/info.json" "$T/typescript"
  tap_result $? "on a terminal: a progress line per file"
else
  tap_result 0 "# SKIP no script(1) to give the download a terminal"
fi
# Two processes through the real launcher, into an empty cache: rank 0 downloads while rank 1
# waits, both train on the same snapshot, and only rank 0 pushes: each file is fetched once and
# one commit is made.
n_requests=$(wc -l <"$T/hub.log")
# shellcheck disable=SC2086
HF_HOME="$T/hf-dp" ok_run "2 processes: rank 0 downloads, both train, rank 0 pushes" "$R" launch --cpu \
  --num_processes=2 --num_cpu_threads_per_process=1 -- "$R" train --dataset.repo_id=lerobot-test/tiny $small \
  --policy.repo_id=user/act-dp --steps=2 "--output_dir=$T/dp"
contains "2 processes: the effective batch" "$T/out" "Effective batch size: 2 x 2 = 4"
contains "2 processes: the cached snapshot" "$T/out" \
  "Dataset lerobot-test/tiny: $T/hf-dp/lerobot/hub/datasets--lerobot-test--tiny/snapshots/$SHA"
tail -n +"$((n_requests + 1))" "$T/hub.log" >"$T/hub-dp.log"
python3 - "$T/hub-dp.log" <<'EOF'
import collections, json, sys
entries = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
gets = collections.Counter(e["path"] for e in entries if e["method"] == "GET" and "/resolve/" in e["path"])
commits = [e for e in entries if "/commit/" in e["path"]]
twice = [p for p, n in gets.items() if n > 1]
if not gets or twice or len(commits) != 1:
    print("# %d files fetched, twice: %r; %d commits" % (len(gets), twice, len(commits)))
    sys.exit(1)
EOF
tap_result $? "2 processes: every file fetched once (by rank 0), one commit (rank 0's push)"

# ---- offline: the server stopped, HF_HUB_OFFLINE=1
kill "$hub_pid"
wait "$hub_pid" 2>/dev/null
# shellcheck disable=SC2086
HF_HUB_OFFLINE=1 ok_run "offline with the server stopped: the same command trains from the cache" "$R" train \
  --dataset.repo_id=lerobot-test/tiny $small --policy.push_to_hub=false --steps=2 "--output_dir=$T/t2"
contains "offline: the cached snapshot" "$T/out" "Dataset lerobot-test/tiny: $snap"
contains "offline: trained" "$T/out" "End of training"
HF_HUB_OFFLINE=1 ok_run "offline: dataset download answers from the cache" "$R" dataset download lerobot-test/tiny
# shellcheck disable=SC2086
HF_HUB_OFFLINE=1 fail_run 1 "offline: a dataset never downloaded" "$R" train --dataset.repo_id=lerobot-test/other \
  $small --policy.push_to_hub=false --steps=1 "--output_dir=$T/t3"
contains "offline miss: names the flag" "$T/err" "--dataset.repo_id=lerobot-test/other"
contains "offline miss: says HF_HUB_OFFLINE" "$T/err" "HF_HUB_OFFLINE"

# ---- W&B
start_wandb() {
  rm -f "$T/wb.port"
  python3 "$S/wandb-server.py" --port-file "$T/wb.port" --record "$T/wb.rec" --state "$T/wb.state" \
    --api-key wb_test_key --entity ent --control "$T/wb.control" &
  wb_pid=$!
  i=0
  while [ ! -s "$T/wb.port" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  WANDB_BASE_URL="http://127.0.0.1:$(cat "$T/wb.port")"
  export WANDB_BASE_URL
}
start_wandb
export WANDB_API_KEY=wb_test_key
wtrain() { # wtrain NAME OUTPUT_DIR FLAGS...
  name=$1; out=$2; shift 2
  # shellcheck disable=SC2086
  ok_run "$name" "$R" train --dataset.repo_id=lerobot-test/tiny "--dataset.root=$data" $small \
    --policy.push_to_hub=false --log_freq=1 --wandb.enable=true --wandb.project=proj --wandb.notes=hello \
    "--output_dir=$out" "$@"
}
wtrain "train --wandb.enable=true streams to the server" "$T/w1" --steps=3 --save_freq=3
contains "names the run" "$T/out" "Track this run --> "
contains "says it uploads the checkpoint as LeRobot's \"model\" artifact" "$T/out" \
  'as the "model" artifact policy_act-seed_1000-dataset_lerobot-test_tiny-000003'
contains "the end says the artifact was uploaded" "$T/out" "1 of 1 artifact(s) uploaded"
# check_artifacts OUTPUT_DIR STATE STEP...: the run's artifacts are exactly LeRobot's "model" artifacts
# of those checkpoints (STATE: COMMITTED, or PENDING for ones whose upload failed), each with the
# alias "latest" once committed, holding model.safetensors with the MD5 and size of the file on disk
check_artifacts() {
  python3 - "$T/wb.state" "$@" <<'EOF2'
import base64, hashlib, json, re, sys
state, out, want_state, steps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
def fail(msg):
    print("# " + msg)
    sys.exit(1)
run_id = json.load(open(out + "/checkpoints/last/pretrained_model/train_config.json"))["wandb"]["run_id"]
arts = [a for a in json.load(open(state)).get("artifacts", {}).values() if a["run"] == run_id]
want = {"policy_act-seed_1000-dataset_lerobot-test_tiny-" + s: s for s in steps}
if sorted(a["name"] for a in arts) != sorted(want):
    fail("artifacts %r, expected %r" % ([a["name"] for a in arts], sorted(want)))
for a in arts:
    weights = "%s/checkpoints/%s/pretrained_model/model.safetensors" % (out, want[a["name"]])
    data = open(weights, "rb").read()
    md5 = base64.b64encode(hashlib.md5(data).digest()).decode()
    if a["type"] != "model" or a["state"] != want_state or (a["entity"], a["project"]) != ("ent", "proj"):
        fail("%s: %r" % (a["name"], {k: a[k] for k in ("type", "state", "entity", "project")}))
    if a["requested_aliases"] != ["latest"]:
        fail("%s: aliases %r" % (a["name"], a["requested_aliases"]))
    if want_state == "COMMITTED":
        # a collection (the name) is the project's: a later run's artifact of that name is its next version
        if "latest" not in a["aliases"] or not re.fullmatch(r"v\d+", a["version"] or "") or a["version"] not in a["aliases"]:
            fail("%s: aliases %r version %r" % (a["name"], a["aliases"], a["version"]))
        if a["files"] != {"model.safetensors": {"md5": md5, "size": len(data)}}:
            fail("%s: files %r, on disk %s %d" % (a["name"], a["files"], md5, len(data)))
        if set(a["manifest"]["contents"]) != {"model.safetensors"}:
            fail("%s: manifest %r" % (a["name"], a["manifest"]))
EOF2
}
check_artifacts "$T/w1" COMMITTED 000003
tap_result $? "W&B: the checkpoint is the committed \"model\" artifact, latest, with model.safetensors' MD5 and size"
# check_run OUTPUT_DIR LINES: the server's run is the one in train_config.json, and holds one history
# line per line of metrics.jsonl, each once, with LeRobot's train/ keys at their step
check_run() {
  python3 - "$T/wb.state" "$1" "$2" <<'EOF'
import json, math, sys
state, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def fail(msg):
    print("# " + msg)
    sys.exit(1)
cfg = json.load(open(out + "/checkpoints/last/pretrained_model/train_config.json"))
run_id = cfg["wandb"]["run_id"]
runs = json.load(open(state))["runs"]
run = runs.get("ent/proj/" + run_id)
if not run:
    fail("no run ent/proj/%s among %r" % (run_id, list(runs)))
if run["overwrites"] or run["gaps"] or run["after_complete"] or not run["complete"] or run["exitcode"] != 0:
    fail("run %r" % {k: run[k] for k in ("overwrites", "gaps", "after_complete", "complete", "exitcode")})
if run["notes"] != "hello" or run["jobType"] != "train_eval" or "policy:act" not in run["tags"]:
    fail("run fields %r %r %r" % (run["notes"], run["jobType"], run["tags"]))
metrics = [json.loads(l) for l in open(out + "/metrics.jsonl") if l.strip()]
hist = [json.loads(h) if isinstance(h, str) else h for h in run["history"]]
if len(hist) != n or len(metrics) != n or run["lines_received"] != n:
    fail("%d history lines, %d received, %d metrics lines, expected %d" % (len(hist), run["lines_received"], len(metrics), n))
for m, h in zip(metrics, hist):
    if h["_step"] != m["steps"]:
        fail("step %r != %r" % (h["_step"], m["steps"]))
    for k in ("loss", "grad_norm", "lr", "update_s", "dataloading_s", "samples", "epochs", "l1_loss"):
        if not math.isclose(h["train/" + k], m[k], rel_tol=1e-12, abs_tol=1e-15):
            fail("step %d: train/%s %r != %r" % (m["steps"], k, h["train/" + k], m[k]))
EOF
}
check_run "$T/w1" 3
tap_result $? "W&B: every metric line once, at its step, with LeRobot's train/ keys; the run id in train_config.json"
wtrain "--resume continues the same W&B run" "$T/w1" --steps=5 --save_freq=5 --wandb.disable_artifact=true \
  "--config_path=$T/w1/checkpoints/last/pretrained_model/train_config.json" --resume=true
! grep -q "artifact" "$T/out"
tap_result $? "--wandb.disable_artifact=true: no artifact note"
check_artifacts "$T/w1" COMMITTED 000003
tap_result $? "--wandb.disable_artifact=true: no artifact of checkpoint 000005"
check_run "$T/w1" 5
tap_result $? "W&B resume: the same run, lines 4 and 5 appended, none sent twice"

wtrain "--wandb.mode=offline writes the run folder only" "$T/w2" --steps=2 --wandb.mode=offline
contains "offline: says how to send it" "$T/out" "robotrain wandb sync "
contains "offline: says artifacts are not logged" "$T/out" "the run is offline and robotrain wandb sync does not upload artifacts"
python3 - "$T/wb.state" "$T/w2/checkpoints/last/pretrained_model/train_config.json" <<'EOF'
import json, sys
run_id = json.load(open(sys.argv[2]))["wandb"]["run_id"]
sys.exit(1 if not run_id or any(k.endswith("/" + run_id) for k in json.load(open(sys.argv[1]))["runs"]) else 0)
EOF
tap_result $? "offline: the server knows nothing of the run"
[ -f "$T/w2/wandb/latest-run/wandb-history.jsonl" ] && [ "$(wc -l <"$T/w2/wandb/latest-run/wandb-history.jsonl")" -eq 2 ]
tap_result $? "offline: the history lines are on disk"
ok_run "robotrain wandb sync DIR sends them" "$R" wandb sync "$T/w2"
contains "sync: one run" "$T/out" "Sent 1 run from $T/w2"
check_run "$T/w2" 2
tap_result $? "after sync the server has the offline run, every line once"
ok_run "wandb sync again: nothing to send" "$R" wandb sync "$T/w2"
contains "sync again: says so" "$T/out" "Nothing to send"
fail_run 2 "wandb: an unknown subcommand" "$R" wandb push
# signed upload URLs refused (as when they expired): a warning, and training goes on to the end
echo '{"upload_status": 403}' >"$T/wb.control"
wtrain "W&B: a refused artifact upload does not stop training" "$T/w5" --steps=2 --save_freq=1
echo '{}' >"$T/wb.control"
contains "refused upload: the warning names the artifact" "$T/err" \
  "W&B artifact policy_act-seed_1000-dataset_lerobot-test_tiny-000001 was not uploaded"
contains "refused upload: the warning says why" "$T/err" "HTTP 403"
contains "refused upload: trained to the end" "$T/out" "End of training"
contains "refused upload: the end counts them" "$T/out" "0 of 2 artifact(s) uploaded"
check_artifacts "$T/w5" PENDING 000001 000002
tap_result $? "refused upload: the artifacts stay uncommitted"
check_run "$T/w5" 2
tap_result $? "refused upload: the metrics are all there"
WANDB_API_KEY=wrong fail_run 1 "W&B: a refused key stops the run before it starts" "$R" train \
  --dataset.repo_id=lerobot-test/tiny "--dataset.root=$data" $small --policy.push_to_hub=false --steps=1 \
  --wandb.enable=true "--output_dir=$T/w3"
contains "refused key: says what to do" "$T/err" "WANDB_API_KEY"
# a two-process run through the real launcher: one W&B run, every line once, from rank 0 only
before=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["runs"]))' "$T/wb.state")
# shellcheck disable=SC2086
ok_run "2 processes with --wandb.enable=true" "$R" launch --cpu --num_processes=2 \
  --num_cpu_threads_per_process=1 -- "$R" train --dataset.repo_id=lerobot-test/tiny "--dataset.root=$data" \
  $small --policy.push_to_hub=false --log_freq=1 --wandb.enable=true --wandb.project=proj --wandb.notes=hello \
  --steps=3 "--output_dir=$T/w4"
after=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["runs"]))' "$T/wb.state")
[ "$after" -eq $((before + 1)) ]
tap_result $? "2 processes: one W&B run ($before runs before, $after after)"
check_run "$T/w4" 3
tap_result $? "2 processes: W&B has every metric line once, the ranks' averages of metrics.jsonl"
check_artifacts "$T/w4" COMMITTED 000003
tap_result $? "2 processes: one \"model\" artifact, from rank 0"
python3 - "$T/wb.state" <<'EOF2'
import json, sys
arts = [a for a in json.load(open(sys.argv[1]))["artifacts"].values()
        if a["name"] == "policy_act-seed_1000-dataset_lerobot-test_tiny-000003" and a["state"] == "COMMITTED"]
got = [(a["version"], a["aliases"]) for a in arts]
print("# %r" % got)
sys.exit(0 if got == [("v0", ["v0"]), ("v1", ["v1", "latest"])] else 1)
EOF2
tap_result $? "the same name in a later run: its version v1, \"latest\" moved to it from v0"
kill "$wb_pid"
echo "1..$tap_n"
exit $tap_failed
