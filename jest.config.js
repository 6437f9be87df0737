/** jest 30 + ts-jest: tests run the real addon from the package root. */
module.exports = {
  preset: "ts-jest",
  testEnvironment: "node",
  roots: ["<rootDir>/__test__"],
  testTimeout: 120000,
};
