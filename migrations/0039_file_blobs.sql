-- Several project files per repository (SPEC §9, §11, §13): the blob id of
-- each matching file the last reconcile read, by path, so that the default
-- branch's check names the files a commit changed, and a push that touched
-- some of them can re-read only those.
alter table repositories add column file_blobs jsonb;
