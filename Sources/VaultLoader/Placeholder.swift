/// Placeholder until the range loader lands.
enum VaultLoaderPlaceholder {}
