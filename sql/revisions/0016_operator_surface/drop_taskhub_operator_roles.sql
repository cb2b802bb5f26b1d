DROP TABLE __SCHEMA__.taskhub_operator_roles;
