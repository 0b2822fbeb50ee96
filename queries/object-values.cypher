// name: object-values
// description: An object's primitive values as stored, where the format has them (hprof): its bytes, and the field layout of its class that decodes them.
// needs: references
// param tag: string -- the snapshot's tag
// param id: int -- the object's id
//
// `values` holds the bytes in hexadecimal: an instance's primitive fields in the order it holds
// them, or a primitive array's length (4 bytes) and first elements; null where the object holds
// none or the format records none (a V8 snapshot keeps numbers and strings as objects of their
// own). An instance's class object, which its `<class>` reference reaches, holds the
// `field_layout` that names and types them, one `type name` line each (docs/data-model.md).
MATCH (s:Snapshot {tag: $tag, status: 'ready'})
MATCH (o:Object {sid: s.sid, id: $id})
CALL (o) {
  WITH o WHERE o.values IS NOT NULL AND NOT o.type ENDS WITH '[]'
  MATCH (o)-[r:REF|WEAK_REF]->(c:Object)
  WHERE r.name = '<class>'
  RETURN head(collect(c.field_layout)) AS layout
}
RETURN o.values AS values, o.type AS type, layout
