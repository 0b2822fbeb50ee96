// name: builds
// description: The builds `heapdb gate` recorded, in build order: name, snapshot tag and load number.
MATCH (b:Build)
RETURN b.build AS build, b.tag AS tag, b.number AS number, b.sid AS sid, b.recorded_at AS recorded_at
ORDER BY b.number IS NULL, b.number, b.sid
