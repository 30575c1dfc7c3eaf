package main

// The requests every accepted policy is evaluated on. Condition keys are
// spelled as MinIO spells them; no two share a name once the prefix is
// dropped (MinIO's map would merge aws:username and ldap:username).
func requests() []request {
	user := func(name string, extra map[string][]string) map[string][]string {
		m := map[string][]string{
			"aws:username":        {name},
			"aws:userid":          {name},
			"aws:principaltype":   {"User"},
			"aws:SourceIp":        {"10.1.2.3"},
			"aws:SecureTransport": {"true"},
			"aws:CurrentTime":     {"2024-06-01T12:00:00Z"},
			"aws:EpochTime":       {"1717243200"},
			"s3:signatureversion": {"AWS4-HMAC-SHA256"},
			"s3:authType":         {"REST-HEADER"},
		}
		for k, v := range extra {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	anon := func(extra map[string][]string) map[string][]string {
		m := map[string][]string{
			"aws:principaltype":   {"Anonymous"},
			"aws:SourceIp":        {"192.168.1.5"},
			"aws:SecureTransport": {"false"},
			"aws:CurrentTime":     {"2024-06-01T12:00:00Z"},
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	type X = map[string][]string
	return []request{
		{"s3:GetObject", "mybucket", "photo.jpg", "alice", user("alice", nil)},
		{"s3:PutObject", "mybucket", "uploads/a.txt", "alice", user("alice", nil)},
		{"s3:ListBucket", "mybucket", "", "alice", user("alice", X{"s3:prefix": {"home/alice/"}, "s3:delimiter": {"/"}, "s3:max-keys": {"100"}})},
		{"s3:ListBucket", "mybucket", "", "alice", user("alice", X{"s3:prefix": {"home/bob/"}, "s3:max-keys": {"1000"}})},
		{"s3:ListBucket", "mybucket", "", "alice", user("alice", nil)},
		{"s3:GetObject", "mybucket", "home/alice/notes.txt", "alice", user("alice", nil)},
		{"s3:GetObject", "mybucket", "home/bob/notes.txt", "alice", user("alice", nil)},
		{"s3:PutObject", "mybucket", "home/bob/notes.txt", "bob", user("bob", nil)},
		{"s3:DeleteObject", "mybucket", "a", "alice", user("alice", X{"s3:versionid": {"v1"}})},
		{"s3:GetBucketLocation", "mybucket", "", "alice", user("alice", nil)},
		{"s3:ListAllMyBuckets", "", "", "alice", user("alice", nil)},
		{"admin:ServerInfo", "", "", "alice", user("alice", nil)},
		{"admin:CreateUser", "", "", "alice", user("alice", X{"aws:SourceIp": {"192.168.1.9"}})},
		{"kms:CreateKey", "", "", "alice", user("alice", nil)},
		{"kms:KeyStatus", "mykey", "", "alice", user("alice", nil)},
		{"kms:KeyStatus", "otherkey", "", "alice", user("alice", nil)},
		{"sts:AssumeRoleWithWebIdentity", "", "", "alice", user("alice", nil)},
		{"s3:GetObject", "other", "x", "alice", user("alice", nil)},
		{"s3:GetObject", "mybucket", "a//b", "alice", user("alice", nil)},
		{"s3:GetObject", "mybucket", "x/../a/b", "alice", user("alice", nil)},
		{"s3:GetObject", "mybucket", "/leading", "alice", user("alice", nil)},
		{"s3:GetObjectVersion", "mybucket", "photo.jpg", "alice", user("alice", X{"s3:versionid": {"v2"}})},
		{"s3:PutObject", "mybucket", "tagged", "alice", user("alice", X{
			"s3:x-amz-server-side-encryption": {"AES256"},
			"s3:RequestObjectTag/project":     {"blue"},
			"s3:RequestObjectTagKeys":         {"project", "env"},
			"s3:x-amz-storage-class":          {"STANDARD"},
		})},
		{"s3:PutObject", "mybucket", "tagged2", "alice", user("alice", X{
			"s3:RequestObjectTagKeys": {"project"},
			"s3:x-amz-copy-source":    {"/srcbucket/src/key"},
		})},
		{"s3:GetObject", "mybucket", "public/index.html", "", anon(nil)},
		{"s3:ListBucket", "mybucket", "", "", anon(X{"s3:prefix": {"public/"}})},
		{"s3:PutObject", "mybucket", "public/drop", "", anon(nil)},
		{"s3:GetObject", "mybucket", "photo.jpg", "alice", user("alice", X{"aws:SourceIp": {"2001:db8::5"}})},
		{"s3:GetObject", "mybucket", "photo.jpg", "alice", user("alice", X{"aws:SourceIp": {"junk"}})},
		{"s3:GetObject", "mybucket", "photo.jpg", "alice", user("alice", X{"aws:CurrentTime": nil, "aws:SecureTransport": {"false"}})},
		{"s3:GetObject", "mybucket", "photo.jpg", "alice", user("alice", X{"aws:CurrentTime": {"2019-01-01T00:00:00Z"}, "aws:SourceIp": {"::ffff:10.9.9.9"}})},
		{"s3:ListBucketVersions", "mybucket", "", "alice", user("alice", X{"s3:prefix": {"home/alice/x"}})},
		{"s3:PutObjectRetention", "mybucket", "locked", "alice", user("alice", X{
			"s3:object-lock-mode":                     {"GOVERNANCE"},
			"s3:object-lock-remaining-retention-days": {"10"},
			"s3:object-lock-retain-until-date":        {"2030-01-01T00:00:00Z"},
		})},
		{"s3:GetObject", "mybucket-2", "photo.jpg", "alice", user("alice", nil)},
		{"s3:GetObjectTagging", "mybucket", "tagged", "alice", user("alice", X{"s3:ExistingObjectTag/project": {"blue"}})},
		{"s3:GetObject", "mybucket", "photo.jpg", "bob", user("bob", X{"aws:UserAgent": {"MinIO (linux; amd64) minio-go/v7"}, "aws:Referer": {"https://example.com/"}})},
		{"s3:GetObject", "mybucket", "jwt/sub-123/x", "svc", user("svc", X{"jwt:sub": {"sub-123"}, "aws:principaltype": {"AssumedRole"}})},
		{"s3:GetObject", "mybucket", "private/secret", "alice", user("alice", nil)},
		{"s3:DeleteObjectVersion", "mybucket", "a", "alice", user("alice", X{"s3:versionid": {"v1"}})},
		{"s3:GetObject", "mybucket", "home/${aws:username}/x", "", anon(nil)},
		{"s3:ListBucket", "mybucket", "", "alice", user("alice", X{"s3:prefix": {""}})},
		{"s3:GetObject", "mybucket", "é/ü", "alice", user("alice", X{"aws:username": {""}})},
		{"s3:CreateBucket", "newbucket", "", "alice", user("alice", X{"s3:LocationConstraint": {"us-east-1"}})},
		{"s3:GetObject", "mybucket", "photo.jpg", "alice", user("alice", X{"aws:EpochTime": {"notanumber"}, "aws:SourceIp": {"10.1.2.3", "172.16.0.1"}})},
	}
}
