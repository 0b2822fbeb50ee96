// name: signature-observations
// description: Every leak signature's retained bytes and objects per recorded build, with the build's snapshot tag.
//
// What the service reads to show a token per team (docs/operations.md, Tokens per team) the
// signatures and histories of its own builds only: each signature's observations filtered by the
// builds' tags, its first and last build and status worked out again from those. One read for all
// signatures, instead of `signature-history` once per signature.
MATCH (o:SignatureObservation)
MATCH (b:Build {build: o.build})
RETURN o.sig AS sig, b.build AS build, b.tag AS tag, b.number AS number, b.sid AS sid,
       o.retained_size AS retained_size, o.objects AS objects, o.present AS present
