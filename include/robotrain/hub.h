/* robotrain/hub.h: a Hugging Face Hub client (download into the shared cache, push a model).
 *
 * Everything goes over HTTP(S) with libcurl and follows the wire protocol and the cache layout of
 * the reference client (Python's huggingface_hub), so LeRobot reuses what robotrain downloads and
 * robotrain reuses what LeRobot downloaded:
 *
 *   <cache>/<type>s--<owner>--<name>/
 *       blobs/<etag>                     file contents, named by git sha1 (small files) or sha256
 *       snapshots/<commit>/<path>        relative symlink to ../../(...)/blobs/<etag>
 *       refs/<revision>                  the 40-hex commit a branch or tag resolved to
 *       trees/<commit>.json              the file listing of that commit (format_version 1)
 *       .no_exist/<commit>/<path>        marker: the file is known not to exist at that commit
 *   <cache>/.locks/<type>s--<owner>--<name>/<etag>.lock
 *
 * <cache> is HF_HUB_CACHE (~/.cache/huggingface/hub) for models, and LeRobot's own
 * $HF_LEROBOT_HOME/hub (~/.cache/huggingface/lerobot/hub) for datasets downloaded the LeRobot
 * way (rt_hub_dataset_download). In "local folder" mode (LeRobot's --dataset.root) files are
 * written at <folder>/<path> with bookkeeping in <folder>/.cache/huggingface/download/.
 *
 * Offline first. A revision that is a commit sha and is fully cached is served with no request
 * at all; a branch or tag is resolved online, and when HF_HUB_OFFLINE is set or the Hub cannot be
 * reached (connection refused, timeout, 5xx) the cache's refs/ answer instead. A file missing
 * from the cache then is an RT_ERROR_NOT_FOUND error that names the repository, the revision and
 * the file, and says how to get it.
 *
 * Errors are GErrors in RT_ERROR. RT_ERROR_NOT_FOUND: 404s (a repository, revision or file that
 * does not exist; the message names it) and offline misses. RT_ERROR_NETWORK: 401/403 (private
 * or gated repository: set HF_TOKEN, accept the terms on the Hub), 5xx after the retries,
 * connection failures, a size or checksum mismatch, a malformed answer. RT_ERROR_IO: the cache
 * or a local file cannot be written or read. RT_ERROR_INVALID_ARG: a malformed repo id, revision
 * or path. Messages carry the URL; the token is never printed.
 *
 * Transfers retry on connection errors and on HTTP 408, 429, 500, 502, 503 and 504, waiting
 * retry_base_s, then twice as long each time up to retry_max_s, or what a Retry-After header
 * asks. A download cut off mid-body resumes with a Range request into
 * blobs/<etag>.incomplete (kept across calls, under the same lock file huggingface_hub uses),
 * then the size and the content hash (git sha1 or sha256, whichever the etag is) are checked
 * before the file is renamed into blobs/.
 *
 * Threads: an rt_hub is used by one thread at a time; different rt_hub objects are independent.
 * Several processes may share one cache (downloads of one blob are serialised by its lock). */
#ifndef ROBOTRAIN_HUB_H
#define ROBOTRAIN_HUB_H

#include <stddef.h>
#include <stdio.h>

#include <glib.h>

G_BEGIN_DECLS

/* The dataset format versions LeRobot's codebase reads ("v3.0"), as a revision. */
#define RT_HUB_LEROBOT_CODEBASE_VERSION "v3.0"

typedef enum rt_hub_repo_type {
    RT_HUB_MODEL,   /* URLs have no prefix; cache folder models--owner--name */
    RT_HUB_DATASET, /* "datasets/"; datasets--owner--name */
    RT_HUB_SPACE,   /* "spaces/"; spaces--owner--name */
} rt_hub_repo_type;

/* "model", "dataset" or "space". */
const char *rt_hub_repo_type_name(rt_hub_repo_type type);

/* ---- configuration ---------------------------------------------------------------------- */

/* Where and how to talk to the Hub. Every string is g_malloc'ed and owned by the config: to
 * change one, g_free() it and store a g_strdup(). */
typedef struct rt_hub_config {
    char *endpoint;            /* HF_ENDPOINT without trailing '/'; default https://huggingface.co */
    char *token;               /* HF_TOKEN, else HUGGING_FACE_HUB_TOKEN, else the token file; NULL: none */
    char *token_path;          /* HF_TOKEN_PATH, default $HF_HOME/token (named in hints) */
    char *hf_home;             /* HF_HOME, default $XDG_CACHE_HOME/huggingface or ~/.cache/huggingface */
    char *hub_cache;           /* HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, default $HF_HOME/hub */
    char *lerobot_home;        /* HF_LEROBOT_HOME, default $HF_HOME/lerobot; datasets go to <it>/hub */
    char *user_agent;          /* "robotrain/<version>; libcurl/<version>" */
    gboolean offline;          /* HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE is 1/ON/YES/TRUE: no HTTP */
    double etag_timeout_s;     /* HF_HUB_ETAG_TIMEOUT, default 10: a whole metadata request */
    double download_timeout_s; /* HF_HUB_DOWNLOAD_TIMEOUT, default 10: connect, or no byte */
    int max_retries;           /* 5: attempts after the first one */
    double retry_base_s;       /* 1: first wait between attempts */
    double retry_max_s;        /* 8: longest wait (a Retry-After may ask for more, up to 300) */
} rt_hub_config;

/* Reads the environment (the variables above) and the token file. A leading "~/" in a path
 * is expanded. Fails only when the token file exists but cannot be read, or a timeout variable
 * is not a number. Returns (transfer full): free with rt_hub_config_free(). */
rt_hub_config *rt_hub_config_new_from_env(GError **error);
/* Returns (transfer full) a deep copy: free with rt_hub_config_free(). */
rt_hub_config *rt_hub_config_copy(const rt_hub_config *config);
void rt_hub_config_free(rt_hub_config *config);

/* LeRobot's dataset cache, $HF_LEROBOT_HOME/hub. Returns (transfer full): g_free(). */
char *rt_hub_config_lerobot_cache(const rt_hub_config *config);

/* ---- the client ------------------------------------------------------------------------- */

typedef struct rt_hub rt_hub;

/* config is copied; NULL reads the environment (rt_hub_config_new_from_env). Returns
 * (transfer full): free with rt_hub_free(); NULL with error set. */
rt_hub *rt_hub_new(const rt_hub_config *config, GError **error);
void rt_hub_free(rt_hub *hub);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(rt_hub, rt_hub_free)
/* The client's configuration (transfer none; valid until rt_hub_free). */
const rt_hub_config *rt_hub_get_config(const rt_hub *hub);
/* Number of HTTP requests this client has sent (each attempt counts): zero after a call served
 * from the cache alone. */
guint rt_hub_request_count(const rt_hub *hub);

/* Progress of one transfer, reported about every 100 ms and at its end. */
typedef struct rt_hub_progress {
    const char *repo_id;
    const char *path; /* the file in the repository */
    gboolean upload;  /* FALSE: download */
    guint64 done;     /* bytes of the file done (a resumed download starts above 0) */
    guint64 total;    /* the file's size; 0 when unknown */
    guint file_index; /* 1-based position of the file in a snapshot or push, else 1 */
    guint n_files;    /* files in that snapshot or push, else 1 */
} rt_hub_progress;

/* Return FALSE to cancel: the call then fails with "cancelled" (RT_ERROR_NETWORK). */
typedef gboolean (*rt_hub_progress_func)(const rt_hub_progress *progress, void *user_data);
/* func may be NULL (no reports). user_data is borrowed. */
void rt_hub_set_progress(rt_hub *hub, rt_hub_progress_func func, void *user_data);

/* A progress line for people: when out is a terminal, every transfer of hub redraws one line
 * ("Fetching 3/12 data/chunk-000/file-000.parquet  45% 1.2 MB/2.6 MB") until detached, which
 * clears it. Returns (transfer full) the display, or NULL when out is not a terminal (nothing
 * is drawn); detach it before freeing hub. */
typedef struct rt_hub_tty_progress rt_hub_tty_progress;
rt_hub_tty_progress *rt_hub_tty_progress_attach(rt_hub *hub, FILE *out);
/* Removes the display and frees it. NULL is allowed. */
void rt_hub_tty_progress_detach(rt_hub_tty_progress *progress);

/* ---- names ------------------------------------------------------------------------------ */

/* TRUE when repo_id is "name" or "owner/name" with names of letters, digits, '-', '_' and '.',
 * not starting or ending with '-' or '.', without "--" or "..", at most 96 characters (the
 * Hub's rules); else FALSE with RT_ERROR_INVALID_ARG naming it. */
gboolean rt_hub_check_repo_id(const char *repo_id, GError **error);
/* "datasets--lerobot--pusht". Returns (transfer full): g_free(). */
char *rt_hub_repo_folder_name(rt_hub_repo_type type, const char *repo_id);
/* TRUE for a full 40-hex lowercase commit sha. */
gboolean rt_hub_is_commit_sha(const char *revision);

/* huggingface_hub's pattern filter: path passes when it matches one of allow (NULL: all pass)
 * and none of ignore (NULL: none). Patterns are fnmatch globs on the whole path ('*' also
 * matches '/', '?', [abc], [!abc]); a pattern ending in '/' means everything below that folder
 * ("meta/" is "meta/" plus "*"). Both lists are NULL-terminated. */
gboolean rt_hub_match_patterns(const char *path, const char *const *allow, const char *const *ignore);

/* ---- looking at a repository ------------------------------------------------------------ */

typedef struct rt_hub_ref {
    char *name;          /* "main", "v3.0" */
    char *ref;           /* "refs/heads/main", "refs/tags/v3.0" */
    char *target_commit; /* 40-hex */
} rt_hub_ref;

typedef struct rt_hub_refs {
    GPtrArray *branches; /* of rt_hub_ref *, owned */
    GPtrArray *tags;     /* of rt_hub_ref *, owned */
} rt_hub_refs;

/* GET /api/<type>s/<repo>/refs. Returns (transfer full): free with rt_hub_refs_free(). */
rt_hub_refs *rt_hub_list_refs(rt_hub *hub, rt_hub_repo_type type, const char *repo_id, GError **error);
void rt_hub_refs_free(rt_hub_refs *refs);

/* The commit sha a revision (branch, tag or sha; NULL: "main") resolves to, asking the Hub
 * (GET /api/<type>s/<repo>/revision/<rev>); offline or when the Hub is unreachable, the cache's
 * refs/<revision> under cache_dir (NULL: HF_HUB_CACHE). Returns (transfer full): g_free(). */
char *rt_hub_resolve_revision(rt_hub *hub, rt_hub_repo_type type, const char *repo_id, const char *revision,
                              const char *cache_dir, GError **error);

/* One file of a repository at a commit (the tree listing). */
typedef struct rt_hub_entry {
    char *path;       /* "meta/info.json" */
    guint64 size;     /* bytes */
    char *blob_id;    /* git blob sha1 (of the LFS pointer for LFS files) */
    char *lfs_sha256; /* LFS/Xet files: sha256 of the content, else NULL */
    char *xet_hash;   /* Xet files, else NULL */
} rt_hub_entry;

void rt_hub_entry_free(rt_hub_entry *entry);

/* Every file at a revision (GET .../tree/<rev>?recursive=true, following the pages), folders
 * left out, in the server's order. Returns (transfer full) an array of rt_hub_entry * that
 * frees its elements: g_ptr_array_unref(). */
GPtrArray *rt_hub_list_files(rt_hub *hub, rt_hub_repo_type type, const char *repo_id, const char *revision,
                             GError **error);

/* ---- downloading ------------------------------------------------------------------------ */

/* Downloads one file (e.g. a backbone's model.safetensors by Hub id) into the cache cache_dir
 * (NULL: HF_HUB_CACHE), revision NULL meaning "main". Returns (transfer full) the path of the
 * file in snapshots/<commit>/ (a symlink into blobs/): g_free(). A cached file is returned with
 * no transfer; offline, a missing one is an RT_ERROR_NOT_FOUND. */
char *rt_hub_download_file(rt_hub *hub, rt_hub_repo_type type, const char *repo_id, const char *revision,
                           const char *path, const char *cache_dir, GError **error);

typedef struct rt_hub_snapshot_options {
    rt_hub_repo_type type;
    const char *repo_id;
    const char *revision;               /* branch, tag or commit; NULL: "main" */
    const char *const *allow_patterns;  /* NULL-terminated; NULL: every file */
    const char *const *ignore_patterns; /* NULL-terminated; NULL: none */
    const char *cache_dir;              /* NULL: HF_HUB_CACHE */
    const char *local_dir;              /* non-NULL: write files at <local_dir>/<path> */
} rt_hub_snapshot_options;

/* huggingface_hub's snapshot_download: resolves the revision to a commit, lists its files,
 * downloads those the patterns select (skipping cached ones) and records refs/<revision>.
 * Offline or unreachable: the cached snapshot of refs/<revision>, checked against the cached
 * listing (and the literal file names among allow_patterns), so a missing file is an error
 * naming it. Returns (transfer full) the folder snapshots/<commit> (or local_dir): g_free(). */
char *rt_hub_snapshot_download(rt_hub *hub, const rt_hub_snapshot_options *options, GError **error);

/* LeRobot's choice of a dataset revision: the first entry of wanted (NULL: {"v3.0", "v2.1"})
 * that is a branch or tag of the repository, else the highest version with the same major and a
 * minor not above it (v3.2 wanted, v3.1 present: v3.1). Versions are "v<major>.<minor>[...]".
 * Online the Hub's refs are used; offline or unreachable, the tags under refs/ in cache_dir
 * (NULL: LeRobot's cache). Returns (transfer full) the tag or branch name: g_free(). */
char *rt_hub_dataset_pick_version(rt_hub *hub, const char *repo_id, const char *const *wanted,
                                  const char *cache_dir, GError **error);

/* Downloads (the allowed files of) a LeRobot dataset as LeRobot does: revision NULL picks the
 * version with rt_hub_dataset_pick_version(), files go to LeRobot's cache
 * ($HF_LEROBOT_HOME/hub), or straight into root when root is non-NULL (--dataset.root). LeRobot
 * first asks for {"meta/"}, reads the metadata, then asks for the data and video files of the
 * episodes it needs. revision_out (may be NULL) receives the revision used (transfer full,
 * g_free), to pass to the next call. Returns (transfer full) the dataset folder: g_free(). */
char *rt_hub_dataset_download(rt_hub *hub, const char *repo_id, const char *revision,
                              const char *const *allow_patterns, const char *root, char **revision_out,
                              GError **error);

/* ---- model weights by Hub id ------------------------------------------------------------- */

/* The Hub repository holding torchvision's weights of that name as safetensors with
 * torchvision's key names ("ResNet18_Weights.IMAGENET1K_V1" -> "timm/resnet18.tv_in1k"; also
 * the other ResNets and their DEFAULT), or NULL for a name it does not know. Returns (transfer
 * none) a static string. */
const char *rt_hub_torchvision_weights_repo(const char *name);
/* TRUE when value reads as a Hub model id ("owner/name", optionally "@revision") or a
 * torchvision weights name of rt_hub_torchvision_weights_repo(), i.e. something
 * rt_hub_weights_file() resolves (a local path should be tried first). */
gboolean rt_hub_looks_like_weights_id(const char *value);
/* The model.safetensors of the Hub model value (an id, "id@revision", or a torchvision weights
 * name) in HF_HUB_CACHE, downloaded unless cached. hub NULL: a client from the environment.
 * flag names the option in messages ("--policy.pretrained_backbone_weights"). Offline or on a
 * 404 the error says how to get the file or to pass null. Returns (transfer full) the path of
 * the cached file: g_free(). */
char *rt_hub_weights_file(rt_hub *hub, const char *value, const char *flag, GError **error);

/* ---- pushing ---------------------------------------------------------------------------- */

/* POST /api/repos/create. An existing repository is fine (409, or a 401/403 on creation while
 * the repository can be read). url_out (may be NULL) receives the repository's page (transfer
 * full, g_free). */
gboolean rt_hub_create_repo(rt_hub *hub, rt_hub_repo_type type, const char *repo_id, gboolean private_repo,
                            char **url_out, GError **error);

/* A file given from memory (e.g. README.md, the model card). The bytes are borrowed. */
typedef struct rt_hub_push_blob {
    const char *path_in_repo;
    const void *data;
    size_t size;
} rt_hub_push_blob;

typedef struct rt_hub_push_options {
    rt_hub_repo_type type; /* usually RT_HUB_MODEL */
    const char *repo_id;
    gboolean private_repo;              /* when the repository is created */
    const char *revision;               /* the branch to commit to; NULL: "main" */
    const char *folder;                 /* every regular file below it (NULL: none); .git/ and
                                           .cache/huggingface/ are always left out */
    const char *path_in_repo;           /* prefix for the folder's files ("checkpoints/005000");
                                           NULL: the repository root */
    const char *const *allow_patterns;  /* on paths relative to folder; NULL: all */
    const char *const *ignore_patterns; /* NULL: none */
    const rt_hub_push_blob *blobs;      /* more files, from memory (may be NULL) */
    size_t n_blobs;
    const char *commit_message;     /* NULL: "Upload folder using robotrain" */
    const char *commit_description; /* NULL: "" */
    const char *parent_commit;      /* NULL, or the commit the branch must still be at */
} rt_hub_push_options;

/* What a push did. */
typedef struct rt_hub_commit {
    char *repo_url;    /* the repository's page */
    char *commit_url;  /* NULL when nothing changed (no commit was made) */
    char *commit_oid;  /* NULL when nothing changed */
    guint n_files;     /* files in the commit */
    guint n_lfs;       /* of which LFS */
    guint n_uploaded;  /* LFS objects whose bytes were sent (the others were stored already) */
    guint n_unchanged; /* files dropped because the Hub has them identical */
} rt_hub_commit;

void rt_hub_commit_free(rt_hub_commit *commit);

/* huggingface_hub's create_repo(exist_ok=True) + upload_folder: creates the repository (private
 * as asked), asks the Hub which files go through LFS (preupload), uploads those with the LFS
 * batch API (sha256, size; one PUT per object, or the parts of a multipart upload, then the
 * verify call when the Hub asks for one), drops the files the Hub already has identical, and
 * makes one commit of the regular files (inline, base64) and the LFS pointers. Only one process
 * of a distributed run should call it. Returns (transfer full): rt_hub_commit_free(). */
rt_hub_commit *rt_hub_push_folder(rt_hub *hub, const rt_hub_push_options *options, GError **error);

/* POST /api/<type>s/<repo>/tag/<revision> (revision NULL: "main"), e.g. the step of a pushed
 * checkpoint. message may be NULL. An existing tag (409) is an error naming it. */
gboolean rt_hub_create_tag(rt_hub *hub, rt_hub_repo_type type, const char *repo_id, const char *tag,
                           const char *revision, const char *message, GError **error);

/* ---- model card ------------------------------------------------------------------------- */

/* The metadata LeRobot puts at the top of a pushed policy's README.md. */
typedef struct rt_hub_model_card {
    const char *policy_type;     /* "act": model_name, and a tag */
    const char *repo_id;         /* the policy's own repository (default body only; may be NULL) */
    const char *license;         /* NULL: "apache-2.0" */
    const char *dataset_repo_id; /* "datasets:"; NULL: left out */
    const char *base_model;      /* NULL: left out (ACT has none) */
    const char *const *tags;     /* added to robotics, lerobot, <policy_type>; NULL-terminated */
} rt_hub_model_card;

/* The YAML block (no "---" lines) with the keys in huggingface_hub's order: base_model,
 * datasets, library_name: lerobot, license, model_name, pipeline_tag: robotics, tags (robotics,
 * lerobot, policy type, then the extra tags, each once). Returns (transfer full): g_free(). */
char *rt_hub_model_card_metadata(const rt_hub_model_card *card);
/* "---\n<metadata>\n---\n\n<body>": body NULL writes a short default card naming the policy
 * type, the dataset and how to train or fine-tune it. Returns (transfer full): g_free(). */
char *rt_hub_model_card_render(const rt_hub_model_card *card, const char *body);

G_END_DECLS

#endif
