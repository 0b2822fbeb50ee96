# heapdb's Neo4j plugin (loader/store/plugin): the bulk-write procedures that make `heapdb load`
# several times faster. compose.yaml builds this image and copies the jar into the Neo4j
# container's /plugins volume before Neo4j starts. Build from the repository root:
#   docker build -f docker/neo4j-plugin.Dockerfile -t heapdb-neo4j-plugin .
FROM maven:3.9-eclipse-temurin-17 AS build
WORKDIR /build
COPY loader/store/plugin ./
RUN mvn -B -q package

FROM busybox:1.36
COPY --from=build /build/target/heapdb-neo4j-plugin.jar /heapdb-neo4j-plugin.jar
CMD ["cp", "/heapdb-neo4j-plugin.jar", "/plugins/"]
